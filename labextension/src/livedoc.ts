/**
 * The live document for `read_notebook` (SPEC §9.7): the kernel opens a comm on the target
 * `nbagent.notebook` with `{"request": "cells"}` (nbagent/notebook/tools/front_end_cells.py), and this
 * plugin answers at once, on that comm, with the notebook as it is in the front end (unsaved edits
 * included): `{cells: [{cell_type, source, execution_count, outputs}], path, dirty}`. To
 * `{"request": "hello"}` it answers `{inserts: true}`: this front end inserts proposed cells itself.
 *
 * Outputs are sent as text: each output's `text/plain` (or stream text, or error name and value),
 * cut to `OUTPUT_CHARS`, and for other data only the MIME type names, so an image or a large HTML
 * table never travels to the kernel (which bounds the whole answer again). Nothing here runs
 * anything: the answer is data.
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';

export const LIVE_TARGET = 'nbagent.notebook';
/** Characters of one cell's source or one output's text sent at most. */
const SOURCE_CHARS = 20_000;
const OUTPUT_CHARS = 4_000;

const cut = (text: string, limit: number): string => (text.length > limit ? `${text.slice(0, limit)}…` : text);
const joined = (value: unknown): string => (Array.isArray(value) ? value.join('') : String(value ?? ''));

/** One nbformat output as the kernel's reader wants it: text only. */
function textOutput(output: Record<string, any>): Record<string, unknown> {
  const kind = output.output_type;
  if (kind === 'stream') {
    return { output_type: kind, name: output.name, text: cut(joined(output.text), OUTPUT_CHARS) };
  }
  if (kind === 'error') {
    return { output_type: kind, ename: String(output.ename ?? ''), evalue: cut(String(output.evalue ?? ''), OUTPUT_CHARS) };
  }
  const data = (output.data ?? {}) as Record<string, unknown>;
  const kept: Record<string, string> = {};
  for (const mime of Object.keys(data)) {
    kept[mime] = mime === 'text/plain' ? cut(joined(data[mime]), OUTPUT_CHARS) : '';
  }
  return { output_type: kind, data: kept };
}

/** The notebook of `panel` as the front end holds it now. */
export function liveCells(panel: NotebookPanel): Record<string, unknown> {
  const model = panel.content.model;
  const cells = [];
  for (const cell of model?.cells ?? []) {
    const json = cell.toJSON() as Record<string, any>;
    cells.push({
      cell_type: json.cell_type,
      source: cut(joined(json.source), SOURCE_CHARS),
      execution_count: json.execution_count ?? null,
      outputs: Array.isArray(json.outputs) ? json.outputs.map(textOutput) : []
    });
  }
  return { cells, path: panel.context.path, dirty: !!model?.dirty };
}

/** Answer the kernel's live-document requests for `panel`, whichever kernel it has. */
function answerFor(panel: NotebookPanel): void {
  const answered = new WeakSet<Kernel.IKernelConnection>();
  const register = (): void => {
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel || answered.has(kernel)) {
      return;
    }
    answered.add(kernel);
    kernel.registerCommTarget(LIVE_TARGET, (comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg) => {
      const request = (msg.content.data as any)?.request;
      if (request === 'hello') {
        comm.send({ inserts: true }); // proposed cells are inserted here (proposal.ts), not set as next input
      } else if (request === 'cells' && !panel.isDisposed) {
        comm.send(liveCells(panel) as any);
      } else {
        comm.close();
      }
    });
  };
  panel.sessionContext.kernelChanged.connect(register);
  void panel.sessionContext.ready.then(register);
  register();
}

export const liveDocumentPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbagent:live-document',
  description: "Answers read_notebook with the notebook as it is in the front end (unsaved edits included).",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach(answerFor);
    tracker.widgetAdded.connect((_, panel) => answerFor(panel));
  }
};
