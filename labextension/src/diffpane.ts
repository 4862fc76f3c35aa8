/**
 * The turn diff in a session tab (SPEC §11.3): a fork's turn beside its parent's ("Diff with
 * parent", on forks only), or, from the parent, one of its forks' turns beside its own ("Compare
 * with fork…"), as the server's diff view model (`nbagent/labserver/diffs.py`) painted by the shared
 * painter (`src/widgets/painter.js`, the module the `%agent diff` widget runs). The pickers are
 * JupyterLab's styled selects; they stay in place (and keep the keyboard focus) while the diff below
 * them repaints. The pane sits above the timeline and scrolls into view when shown.
 */

import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { caretDownEmptyIcon } from '@jupyterlab/ui-components';

import { get, Source, where } from './api';
import { diffView, el } from './widgets/painter.js';
import type { IDiffModel } from './widgets/painter.js';

/** What the diff endpoint answers. */
export interface IDiffAnswer {
  /** The view model, or `null` when there is nothing to compare (`why` says so). */
  diff: IDiffModel | null;
  why?: string;
  turns_a: number[];
  turns_b: number[];
  turn_a: number;
  turn_b: number;
}

/** A fork the parent's tab can compare with. */
export interface IForkChoice {
  id: string;
  label: string;
}

/** The diff of session `id` of `file` against its parent; turns default to the fork's last. */
export async function fetchDiff(
  source: Source | string,
  id: string,
  turn?: number,
  againstTurn?: number
): Promise<IDiffAnswer> {
  const params: Record<string, string | number> = where(source);
  if (turn !== undefined) {
    params.turn = turn;
  }
  if (againstTurn !== undefined) {
    params.against_turn = againstTurn;
  }
  return (await get(`${encodeURIComponent(id)}/diff`, params)).json();
}

/** JupyterLab's styled select (the DOM its `HTMLSelect` renders), with its caret. */
export function styledSelect(label: string, cls: string): { box: HTMLElement; select: HTMLSelectElement } {
  const box = el('div', 'jp-HTMLSelect jp-DefaultStyle jp-nbagent-select');
  const select = document.createElement('select');
  select.className = cls;
  select.setAttribute('aria-label', label);
  box.append(select, caretDownEmptyIcon.element({ tag: 'span', stylesheet: 'select', right: '4px', top: '4px' }));
  return { box, select };
}

/** Put `options` ([value, words]) in `select`, `chosen` selected, without replacing the element. */
export function setOptions(select: HTMLSelectElement, options: [string, string][], chosen: string): void {
  const same =
    select.options.length === options.length &&
    options.every(([v, w], i) => select.options[i].value === v && select.options[i].textContent === w);
  if (!same) {
    select.replaceChildren(
      ...options.map(([value, words]) => {
        const option = document.createElement('option');
        option.value = value;
        option.textContent = words;
        return option;
      })
    );
  }
  select.value = chosen;
}

/** The pane: its pickers and the painted diff (or why there is none). */
export class DiffPane {
  readonly node: HTMLElement;

  constructor(
    private _file: Source | string,
    private _id: string,
    trans: TranslationBundle = nullTranslator.load('nbagent')
  ) {
    this._trans = trans;
    this.node = el('div', 'jp-nbagent-diff');
    this.node.hidden = true;
    this._title = el('span', '', trans.__('Diff with parent: a'));
    this._fork = styledSelect(trans.__('Fork to compare with'), 'nba-diff-fork');
    this._a = styledSelect(trans.__('Parent turn (a)'), 'nba-diff-turn');
    this._b = styledSelect(trans.__('This fork turn (b)'), 'nba-diff-turn');
    this._a.select.dataset.side = 'a';
    this._b.select.dataset.side = 'b';
    this._fork.box.hidden = true;
    const change = (): void => void this.show(Number(this._b.select.value), Number(this._a.select.value));
    this._a.select.addEventListener('change', change);
    this._b.select.addEventListener('change', change);
    this._fork.select.addEventListener('change', () => void this.show());
    this._bar = el('div', 'jp-nbagent-diff-bar');
    this._bar.append(this._title, this._fork.box, this._a.box, el('span', '', 'b'), this._b.box);
    this._body = el('div', 'jp-nbagent-diff-body');
    this.node.append(this._bar, this._body);
  }

  /** Show or hide the fork's diff with its parent; shown, it fetches the diff and scrolls to it. */
  async toggle(): Promise<void> {
    const shownHere = !this.node.hidden && this._forks === null;
    this.node.hidden = shownHere;
    this._forks = null;
    this._fork.box.hidden = true;
    this._title.textContent = this._trans.__('Diff with parent: a');
    this._b.select.setAttribute('aria-label', this._trans.__('This fork turn (b)'));
    if (!this.node.hidden) {
      await this.show();
    }
  }

  /** From a parent's tab: compare one of its `forks` (picked here) with this session. */
  async compare(forks: IForkChoice[]): Promise<void> {
    this._forks = forks;
    this.node.hidden = false;
    this._fork.box.hidden = false;
    this._title.textContent = this._trans.__('Compare this session (a) with fork');
    this._b.select.setAttribute('aria-label', this._trans.__('Fork turn (b)'));
    setOptions(
      this._fork.select,
      forks.map(f => [f.id, f.label]),
      this._fork.select.value && forks.some(f => f.id === this._fork.select.value) ? this._fork.select.value : forks[0]?.id ?? ''
    );
    await this.show();
    this._fork.select.focus();
  }

  async show(turn?: number, againstTurn?: number): Promise<void> {
    this.node.dataset.state = 'loading';
    const id = this._forks ? this._fork.select.value : this._id;
    try {
      const answer = await fetchDiff(this._file, id, turn, againstTurn);
      if (answer.diff === null) {
        this._bar.hidden = this._forks === null;
        this._body.replaceChildren(el('div', 'jp-nbagent-diff-none', answer.why ?? ''));
        this.node.dataset.state = 'none';
      } else {
        this._bar.hidden = false;
        const trans = this._trans;
        // The pickers stay (the focus with them); only their options and the diff change.
        setOptions(this._a.select, answer.turns_a.map(t => [String(t), trans.__('turn %1', t)]), String(answer.turn_a));
        setOptions(this._b.select, answer.turns_b.map(t => [String(t), trans.__('turn %1', t)]), String(answer.turn_b));
        this._body.replaceChildren(diffView(answer.diff));
        this.node.dataset.state = 'ok';
      }
    } catch (error) {
      // The server's words (a turn a side does not have names the turns it has).
      this._body.replaceChildren(el('div', 'jp-nbagent-diff-error', (error as Error).message));
      this.node.dataset.state = 'error';
    }
    this.node.scrollIntoView({ block: 'nearest' });
  }

  private _trans: TranslationBundle;
  private _forks: IForkChoice[] | null = null;
  private _title: HTMLElement;
  private _fork: { box: HTMLElement; select: HTMLSelectElement };
  private _a: { box: HTMLElement; select: HTMLSelectElement };
  private _b: { box: HTMLElement; select: HTMLSelectElement };
  private _bar: HTMLElement;
  private _body: HTMLElement;
}
