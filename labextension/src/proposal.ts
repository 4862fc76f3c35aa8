/**
 * Proposed cells (SPEC §9.7): the row a `proposal` node paints, and the plugin that inserts one.
 *
 * The row shows the proposal's code as text with Insert below, Insert and run and Copy. Its insert
 * buttons dispatch a bubbling DOM event (`nbagent-proposal`), so any painter in the page can offer
 * them (the mime renderer, the live timeline widget) without knowing JupyterLab: the plugin here
 * catches the event in a notebook, finds the cell the proposal belongs to (the turn's cell by id,
 * else the cell whose output holds the row) and runs the `nbagent:insert-proposal` command, which
 * inserts the code below it with NotebookActions (no kernel round trip) and, for Insert and run,
 * runs it. Then the kernel is told on the comm target `nbagent.proposals`, so the model reads it as
 * notebook context at its next step. An event nobody catches (no notebook around the row) inserts
 * nothing, and the row says to use Copy.
 *
 * Read-only where insert cannot work: outputs outside a notebook, untrusted outputs, and a notebook
 * without a kernel show the code and Copy only (the insert buttons are hidden until a kernel is there).
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Clipboard } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import { ITranslator, nullTranslator, TranslationBundle } from '@jupyterlab/translation';

import type { IProposalNode } from './widgets/painter.js';

export const PROPOSAL_EVENT = 'nbagent-proposal';
/** The words of this module, in the user's language once the plugin has started. */
let trans: TranslationBundle = nullTranslator.load('nbagent');
export const INSERT_COMMAND = 'nbagent:insert-proposal';
/** The kernel's comm target for what the user did (nbagent/notebook/tools/proposals.py). */
export const ACTIONS_TARGET = 'nbagent.proposals';
const NEEDS_KERNEL = 'needsKernel';


/** The detail of the DOM event an insert button dispatches. */
export interface IProposalRequest {
  proposal: string;
  code: string;
  run: boolean;
  /** The turn's cell id, when the prompt's cell was known. */
  cellId: string | null;
  /** Called once with what happened, for the row to say. */
  settle: (said: string, inserted: boolean) => void;
}

/** Where a proposal went, as the notebook itself records it (the inserted cell's metadata). */
export interface IPlaced {
  ran: boolean;
  below: number | null;
}

/**
 * Whether the place a row is painted can insert: `true` (a trusted output in a notebook with a
 * kernel), `false` (not now: no kernel; the buttons appear when one starts), `null` (never: an
 * untrusted output). `placed` finds a proposal the notebook already holds (its cell's metadata),
 * so a reopened notebook shows it inserted, whatever its kernel knows.
 */
export type CanInsert = (() => boolean | null) & { placed?: (n: IProposalNode) => IPlaced | null };

/** The metadata key an inserted proposal's cell carries (saved with the notebook). */
export const CELL_METADATA = 'nbagent';

/** What an inserted cell records: which proposal, asked by which cell, where, and whether it ran. */
interface ICellMark {
  proposal: string;
  asked_by: string;
  below: number | null;
  ran: boolean;
}

function markOf(metadata: unknown): ICellMark | null {
  const m = (metadata as Record<string, unknown> | undefined)?.[CELL_METADATA] as Partial<ICellMark> | undefined;
  return m && typeof m.proposal === 'string' && typeof m.asked_by === 'string'
    ? { proposal: m.proposal, asked_by: m.asked_by, below: typeof m.below === 'number' ? m.below : null, ran: !!m.ran }
    : null;
}

/** `TURN.K` as numbers, to keep the model's order among one turn's proposals. */
function rank(proposal: string): number[] {
  return proposal.split('.').map(p => Number(p) || 0);
}

function before(a: string, b: string): boolean {
  const [x, y] = [rank(a), rank(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if ((x[i] ?? 0) !== (y[i] ?? 0)) {
      return (x[i] ?? 0) < (y[i] ?? 0);
    }
  }
  return false;
}

function h(tag: string, cls: string, text?: string): HTMLElement {
  const e = document.createElement(tag);
  e.className = cls;
  if (text !== undefined) {
    e.textContent = text;
  }
  return e;
}

/** Disable or enable the insert buttons, saying why in their tooltip (JupyterLab's disabled look). */
function hold(buttons: HTMLButtonElement[], why: string | null): void {
  for (const b of buttons) {
    b.disabled = why !== null;
    b.title = why ?? b.dataset.title ?? '';
  }
}

/** Show or hide an insert button (a style, since `.jp-Button`'s display outranks `hidden`). */
function offerInsert(b: HTMLElement, show: boolean): void {
  b.hidden = !show;
  b.style.display = show ? '' : 'none';
}

function button(action: string, label: string, title: string): HTMLButtonElement {
  const b = h('button', 'jp-Button jp-mod-minimal jp-mod-small nba-proposal-button', label) as HTMLButtonElement;
  b.type = 'button';
  b.dataset.action = action;
  b.dataset.title = title;
  b.title = title;
  return b;
}

/** Copy `text` to the system clipboard (the async API where allowed, else JupyterLab's). */
async function copy(text: string): Promise<void> {
  try {
    await navigator.clipboard.writeText(text);
  } catch {
    Clipboard.copyToSystem(text);
  }
}

/** The row of one proposal; `canInsert` says whether insert buttons are offered here. */
export function proposalRow(n: IProposalNode, canInsert: CanInsert | null): HTMLElement {
  const box = h('div', 'nba-item nba-proposal');
  box.dataset.id = n.id;
  box.dataset.proposal = n.proposal;
  const row = h('div', 'nba-row');
  const badge = h('span', 'nba-badge', trans.__('proposed cell %1', n.proposal));
  badge.dataset.kind = 'notebook';
  row.append(badge);
  if (n.note) {
    row.append(h('span', 'nba-line', n.note));
  }
  const code = h('pre', 'nba-proposal-code', n.code);
  const actions = h('div', 'nba-proposal-actions');
  const said = h('span', 'nba-muted nba-proposal-said');
  said.setAttribute('role', 'status');
  const inserts: HTMLButtonElement[] = [];
  const offer = canInsert === null ? null : canInsert();
  if (offer !== null) {
    for (const [action, label, title] of [
      ['insert', trans.__('Insert below'), trans.__('Insert this cell below the cell that asked')],
      ['insert-and-run', trans.__('Insert and run'), trans.__('Insert this cell below the cell that asked, and run it')]
    ]) {
      const b = button(action, label, title);
      b.dataset[NEEDS_KERNEL] = 'true';
      offerInsert(b, offer);
      b.addEventListener('click', () => request(b, action === 'insert-and-run'));
      inserts.push(b);
    }
  }
  const copier = button('copy', trans.__('Copy'), trans.__('Copy the code to the clipboard'));
  copier.addEventListener('click', () => {
    copy(n.code)
      .then(() => (said.textContent = trans.__('copied')))
      .catch(() => (said.textContent = trans.__('could not copy: select the code above')));
  });
  actions.append(...inserts, copier, said);
  box.append(row, code, actions);
  box.dataset.state = 'proposed';
  // The log (its notebook message) or the notebook (the inserted cell's metadata) says the user
  // inserted it: say where (the words the click showed), offer Copy only.
  const placed: IPlaced | null =
    n.done === 'inserted' || n.done === 'inserted-and-ran'
      ? { ran: n.done === 'inserted-and-ran', below: n.done_below ?? null }
      : canInsert?.placed?.(n) ?? null;
  if (placed) {
    box.dataset.state = placed.ran ? 'inserted-and-ran' : 'inserted';
    said.textContent = insertedWords(placed.ran, placed.below);
    hold(inserts, trans.__('Already inserted: this notebook holds this proposal'));
  }

  function request(from: HTMLButtonElement, run: boolean): void {
    hold(inserts, trans.__('Inserting…'));
    const settle = (words: string, inserted: boolean): void => {
      said.textContent = words;
      box.dataset.state = inserted ? (run ? 'inserted-and-ran' : 'inserted') : 'proposed';
      hold(inserts, inserted ? trans.__('Already inserted: this notebook holds this proposal') : null);
    };
    const detail: IProposalRequest = { proposal: n.proposal, code: n.code, run, cellId: n.cell?.cell_id ?? null, settle };
    const event = new CustomEvent(PROPOSAL_EVENT, { bubbles: true, cancelable: true, detail });
    if (from.dispatchEvent(event)) {
      settle(trans.__('inserting needs this notebook open in JupyterLab or Notebook 7: use Copy'), false);
    }
  }
  return box;
}

/** The cell of `panel` whose node holds `node`. */
function holder(panel: NotebookPanel, node: Node): NotebookPanel['content']['widgets'][number] | null {
  return panel.content.widgets.find(c => c.node.contains(node)) ?? null;
}

/** The cell of `panel` that holds proposal `proposal` asked by cell `askedBy` (any asker when null). */
function placedCell(panel: NotebookPanel, proposal: string, askedBy: string | null): ICellMark | null {
  // The model's cells: while a notebook opens, an output paints before the cells below it have widgets.
  for (const c of panel.content.model?.cells ?? []) {
    const m = markOf(c.metadata);
    if (m && m.proposal === proposal && (askedBy === null || m.asked_by === askedBy)) {
      return m;
    }
  }
  return null;
}

/** `canInsert` for outputs of `panel`: it has a kernel. Rows painted earlier follow the kernel. */
export function proposalHost(panel: NotebookPanel): CanInsert {
  const kernel = (): boolean => !!panel.sessionContext.session?.kernel;
  const live: CanInsert = Object.assign(kernel, {
    placed: (n: IProposalNode) => placedCell(panel, n.proposal, n.cell?.cell_id ?? null)
  });
  const follow = (): void => {
    const show = kernel();
    panel.node.querySelectorAll<HTMLElement>('.nba-proposal [data-needs-kernel]').forEach(b => offerInsert(b, show));
  };
  panel.sessionContext.kernelChanged.connect(follow);
  panel.sessionContext.statusChanged.connect(follow);
  return live;
}

/** Tell the kernel what the user did (a note the model reads at its next step); never throws. */
function tell(panel: NotebookPanel, data: Record<string, unknown>): void {
  const kernel = panel.sessionContext.session?.kernel;
  if (!kernel || kernel.isDisposed || !kernel.hasComm) {
    return;
  }
  try {
    const comm = kernel.createComm(ACTIONS_TARGET);
    comm.open(data as any);
  } catch {
    // no kernel to tell: the cell is inserted all the same
  }
}

interface IInsertArgs {
  path: string;
  anchor: string;
  code: string;
  run: boolean;
  proposal: string;
}

/** What an insert did: the sentence to show, and whether the cell went in. */
interface IInserted {
  said: string;
  inserted: boolean;
}

/** Insert the proposal below `anchor` in the notebook at `path`. */
async function insert(tracker: INotebookTracker, args: IInsertArgs): Promise<IInserted> {
  const panel = tracker.find(p => p.context.path === args.path);
  const notebook = panel?.content;
  const index = notebook ? notebook.widgets.findIndex(c => c.model.id === args.anchor) : -1;
  if (!panel || !notebook || index < 0) {
    return { said: trans.__('not inserted: the cell that asked is no longer in this notebook'), inserted: false };
  }
  const anchor = notebook.widgets[index];
  const count = (anchor.model as any).executionCount ?? null;
  const already = placedCell(panel, args.proposal, args.anchor);
  if (already) {
    // One proposal goes in once: a second click (or a reopened notebook's) inserts nothing.
    return { said: insertedWords(already.ran, already.below), inserted: true };
  }
  // Below the cell that asked, after that turn's proposals already inserted that come before this
  // one, so 1.1 then 1.2 read in the model's order.
  let at = index;
  while (at + 1 < notebook.widgets.length) {
    const m = markOf(notebook.widgets[at + 1].model.metadata);
    if (!m || m.asked_by !== args.anchor || !before(m.proposal, args.proposal)) {
      break;
    }
    at += 1;
  }
  notebook.activeCellIndex = at;
  NotebookActions.insertBelow(notebook);
  const cell = notebook.activeCell!;
  cell.model.sharedModel.setSource(args.code);
  const mark: ICellMark = { proposal: args.proposal, asked_by: args.anchor, below: count, ran: args.run };
  cell.model.setMetadata(CELL_METADATA, mark as any);
  tell(panel, {
    action: args.run ? 'inserted-and-ran' : 'inserted',
    proposal: args.proposal,
    cell: { cell_id: cell.model.id },
    below: { execution_count: count }
  });
  if (args.run) {
    await NotebookActions.run(notebook, panel.sessionContext);
  }
  return { said: insertedWords(args.run, count), inserted: true };
}

/** Where an inserted proposal went, in the words its row shows (after the click, and reopened). */
function insertedWords(ran: boolean, count: number | null): string {
  if (count === null) {
    return ran ? trans.__('inserted and ran below the cell that asked') : trans.__('inserted below the cell that asked');
  }
  return ran ? trans.__('inserted and ran below In [%1]', count) : trans.__('inserted below In [%1]', count);
}

export const proposalPlugin: JupyterFrontEndPlugin<void> = {
  id: 'nbagent:proposals',
  description: 'Inserts cells an agent proposed (propose_cell) below the cell that asked.',
  autoStart: true,
  requires: [INotebookTracker],
  optional: [ITranslator],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker, translator: ITranslator | null) => {
    trans = (translator ?? nullTranslator).load('nbagent');
    app.commands.addCommand(INSERT_COMMAND, {
      label: trans.__('Insert Proposed Cell'),
      execute: args => insert(tracker, args as unknown as IInsertArgs)
    });
    document.addEventListener(PROPOSAL_EVENT, event => {
      const ask = (event as CustomEvent<IProposalRequest>).detail;
      const from = event.target as HTMLElement;
      const panel = tracker.find(p => p.node.contains(from));
      const own = panel ? holder(panel, from) : null;
      if (!panel || !own) {
        return; // not in a notebook: the row says to copy
      }
      event.preventDefault();
      if (!own.model.trusted) {
        ask.settle(trans.__('not inserted: this output is not trusted (File › Trust Notebook first)'), false);
        return;
      }
      const byId = ask.cellId ? panel.content.widgets.find(c => c.model.id === ask.cellId) : undefined;
      const args = { path: panel.context.path, anchor: (byId ?? own).model.id, code: ask.code, run: ask.run, proposal: ask.proposal };
      app.commands
        .execute(INSERT_COMMAND, args as any)
        .then(done => {
          const { said, inserted } = done as unknown as IInserted;
          ask.settle(said, inserted);
        })
        .catch(err => ask.settle(trans.__('not inserted: %1', String(err)), false));
    });
  }
};
