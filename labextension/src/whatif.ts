/**
 * "What if…" and "Which context mattered?" in a session tab (SPEC §11.4, §11.5). The pane reads a
 * finished turn's arrivals from the server (`GET …/<id>/plan`, nbagent/labserver/plans.py) and
 * paints the shared editor (src/widgets/whatif_editor.js, the one the timeline widget runs).
 * Replay and attribution run in a notebook's kernel: the pane asks each open notebook's kernel on
 * the comm target `nbagent.whatif` (nbagent/notebook/kernel/whatif_comm.py) whether it holds the session,
 * and sends the request to the first that does; the kernel streams the widget's messages back on
 * that comm. Without such a kernel the editor offers the equivalent magic lines to copy.
 */

import { INotebookTracker } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';

import { get, ISession, where } from './api';
import { setOptions, styledSelect } from './diffpane';
import { diffView, el } from './widgets/painter.js';
import { attributionBars, whatIfEditor, IEditorPlan, IWhatIfEdits } from './widgets/whatif_editor.js';

export const WHATIF_TARGET = 'nbagent.whatif';
/** How long a kernel may take to say whether it holds a session. */
const HOLDS_MS = 4000;

let notebooks: INotebookTracker | null = null;

/** Where the pane looks for kernels (the notebook tracker, set by the renderer plugin). */
export function setNotebookTracker(tracker: INotebookTracker | null): void {
  notebooks = tracker;
}

type Message = Record<string, any>;

/** Open a comm on `kernel` with `data`; `onMsg` gets each message; resolves when it closes. */
function ask(kernel: Kernel.IKernelConnection, data: Message, onMsg: (m: Message) => void): Promise<void> {
  return new Promise(resolve => {
    const comm = kernel.createComm(WHATIF_TARGET);
    comm.onMsg = msg => onMsg(msg.content.data as Message);
    comm.onClose = () => resolve();
    try {
      comm.open(data as any);
    } catch {
      resolve();
    }
  });
}

/** The kernel of an open notebook whose current session is `sessionId`, or `null`. */
export async function kernelHolding(sessionId: string): Promise<Kernel.IKernelConnection | null> {
  const kernels: Kernel.IKernelConnection[] = [];
  notebooks?.forEach(panel => {
    const kernel = panel.sessionContext.session?.kernel;
    if (kernel && kernel.connectionStatus === 'connected') {
      kernels.push(kernel);
    }
  });
  for (const kernel of kernels) {
    let holds = false;
    const answered = ask(kernel, { request: 'holds', session: sessionId }, m => (holds = !!m.holds));
    await Promise.race([answered, new Promise(r => setTimeout(r, HOLDS_MS))]);
    if (holds) {
      return kernel;
    }
  }
  return null;
}

interface IPlanAnswer {
  plan: IEditorPlan | null;
  turns: number[];
  why?: string;
}

/** The pane above a tab's timeline: a turn picker, then the editor or the attribution. */
export class WhatIfPane {
  readonly node: HTMLElement;

  constructor(
    private _session: Pick<ISession, 'file' | 'id' | 'db'>,
    trans: TranslationBundle = nullTranslator.load('nbagent')
  ) {
    this._trans = trans;
    this.node = el('div', 'jp-nbagent-whatif');
    this.node.hidden = true;
    this._picker = styledSelect(trans.__('Finished turn'), 'nba-whatif-turn');
    this._picker.select.addEventListener('change', () => void this._paint(Number(this._picker.select.value)));
    this._title = el('span', 'jp-nbagent-whatif-title');
    const close = el('button', 'jp-Button jp-mod-minimal jp-mod-small', trans.__('Close')) as HTMLButtonElement;
    close.type = 'button';
    close.addEventListener('click', () => (this.node.hidden = true));
    const bar = el('div', 'jp-nbagent-diff-bar');
    bar.append(this._title, this._picker.box, el('span', 'nba-grow'), close);
    this._said = el('div', 'jp-nbagent-whatif-said');
    this._said.setAttribute('role', 'status');
    this._body = el('div', 'nbagent jp-nbagent-whatif-body');
    this.node.append(bar, this._said, this._body);
  }

  /** Show the editor (`whatif`) or the attribution (`why`) on the last finished turn. */
  async open(mode: 'whatif' | 'why'): Promise<void> {
    this._mode = mode;
    this.node.hidden = false;
    this.node.dataset.mode = mode;
    this._title.textContent =
      mode === 'whatif' ? this._trans.__('What if\u2026 turn') : this._trans.__('Which context mattered? turn');
    await this._paint();
    this.node.scrollIntoView({ block: 'nearest' });
  }

  private async _paint(turn?: number): Promise<void> {
    this.node.dataset.state = 'loading';
    try {
      const params: Record<string, string | number> = where(this._session);
      if (turn !== undefined) {
        params.turn = turn;
      }
      const answer: IPlanAnswer = await (await get(`${encodeURIComponent(this._session.id)}/plan`, params)).json();
      if (!answer.plan) {
        this._body.replaceChildren(el('div', 'jp-nbagent-diff-none', answer.why ?? ''));
        this.node.dataset.state = 'none';
        return;
      }
      const plan = answer.plan;
      setOptions(
        this._picker.select,
        answer.turns.map(t => [String(t), String(t)]),
        String(plan.turn)
      );
      this._said.textContent = this._trans.__('looking for a notebook whose kernel holds this session…');
      this._kernel = await kernelHolding(this._session.id);
      this._said.textContent = this._kernel
        ? this._trans.__('runs in the kernel of an open notebook that holds this session')
        : this._trans.__('no open notebook\u2019s kernel holds this session');
      this.node.dataset.kernel = String(!!this._kernel);
      if (this._mode === 'why') {
        this._paintWhy(plan.turn);
      } else {
        const editor = whatIfEditor(plan, {
          replay: this._kernel ? (edits, area) => this._replay(edits, area, editor) : undefined
        });
        this._body.replaceChildren(editor.root);
      }
      this.node.dataset.state = 'ok';
    } catch (error) {
      this._body.replaceChildren(el('div', 'jp-nbagent-diff-error', (error as Error).message));
      this.node.dataset.state = 'error';
    }
  }

  private _replay(edits: IWhatIfEdits, area: HTMLElement, editor: ReturnType<typeof whatIfEditor>): Promise<void> {
    const kernel = this._kernel;
    if (!kernel) {
      return Promise.resolve();
    }
    area.replaceChildren();
    let events = 0;
    const data = { request: 'whatif-replay', session: this._session.id, key: `tab-${++this._runs}`, ...edits };
    return ask(kernel, data, m => {
      if (m.type === 'whatif-started') {
        editor.say(this._trans.__('replaying turn %1 in fork %2…', m.turn, String(m.fork).slice(0, 8)), 'replaying');
      } else if (m.type === 'whatif-patch') {
        events += (m.to ?? 0) - (m.from ?? 0);
        editor.say(this._trans.__('replaying… %1 events', events), 'replaying');
      } else if (m.type === 'whatif-done') {
        const late = (m.late ?? []).length;
        editor.say(
          late
            ? this._trans.__('replayed: %1 · %2 arrival(s) never reached, pending after · the diff is below', m.outcome, late)
            : this._trans.__('replayed: %1 · fork %2 · the diff is below', m.outcome, String(m.fork).slice(0, 8)),
          'done'
        );
        area.append(diffView(m.diff ?? {}));
        area.scrollIntoView({ block: 'nearest' });
      } else if (m.type === 'whatif-error') {
        editor.say(String(m.message), 'failed');
      }
    });
  }

  private _paintWhy(turn: number): void {
    const box = el('div', 'nba-why-box', undefined, { turn });
    const status = el('div', 'nba-why-status');
    this._body.replaceChildren(box);
    const kernel = this._kernel;
    if (!kernel) {
      box.append(
        el('div', '', this._trans.__('Run this in the notebook whose kernel holds the session:')),
        el('pre', 'nba-whatif-lines', `%agent why ${turn}`)
      );
      return;
    }
    box.append(status);
    status.textContent = this._trans.__('reading the plan…');
    void ask(kernel, { request: 'why-plan', session: this._session.id, turn }, m => {
      if (m.type === 'why-plan') {
        status.replaceChildren(el('pre', 'nba-why-plan', m.text));
        const go = el('button', 'jp-Button jp-mod-accept jp-mod-small', this._trans.__('Run %1 replays', m.runs), {
          action: 'why-run'
        }) as HTMLButtonElement;
        go.type = 'button';
        go.addEventListener('click', () => {
          go.disabled = true;
          const running = el('div', 'nba-muted', this._trans.__('running %1 replays…', m.runs));
          box.append(running);
          void ask(kernel, { request: 'why-run', session: this._session.id, turn }, r => {
            if (r.type === 'why-done') {
              running.replaceWith(attributionBars(r.result));
            } else if (r.type === 'why-error') {
              running.replaceWith(el('div', 'nba-whatif-error', String(r.message)));
            }
          });
        });
        status.append(go);
      } else if (m.type === 'why-error') {
        status.replaceChildren(el('div', 'nba-whatif-error', String(m.message)));
      }
    });
  }

  private _trans: TranslationBundle;
  private _mode: 'whatif' | 'why' = 'whatif';
  private _kernel: Kernel.IKernelConnection | null = null;
  private _runs = 0;
  private _picker: { box: HTMLElement; select: HTMLSelectElement };
  private _title: HTMLElement;
  private _said: HTMLElement;
  private _body: HTMLElement;
}
