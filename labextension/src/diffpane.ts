/**
 * "Diff with parent" in a fork's session tab (SPEC §11.3): the fork's turn beside its parent's, as
 * the server's diff view model (`nbagent/labserver/diffs.py`) painted by the shared painter
 * (`nbagent/widgets/painter.js`, the module the `%agent diff` widget runs), with a turn picker for
 * each side. The pane sits above the timeline in the tab; the toolbar button shows and hides it.
 */

import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';

import { get } from './api';
import { diffView, el } from '../../nbagent/widgets/painter.js';

/** What the diff endpoint answers. */
export interface IDiffAnswer {
  /** The view model, or `null` when there is nothing to compare (`why` says so). */
  diff: any;
  why?: string;
  turns_a: number[];
  turns_b: number[];
  turn_a: number;
  turn_b: number;
}

/** The diff of session `id` of `file` against its parent; turns default to the fork's last. */
export async function fetchDiff(file: string, id: string, turn?: number, againstTurn?: number): Promise<IDiffAnswer> {
  const params: Record<string, string | number> = { file };
  if (turn !== undefined) {
    params.turn = turn;
  }
  if (againstTurn !== undefined) {
    params.against_turn = againstTurn;
  }
  return (await get(`${encodeURIComponent(id)}/diff`, params)).json();
}

function picker(
  label: string,
  turns: number[],
  chosen: number,
  side: string,
  trans: TranslationBundle
): HTMLSelectElement {
  const select = document.createElement('select');
  select.className = 'jp-mod-styled nba-diff-turn';
  select.dataset.side = side;
  select.setAttribute('aria-label', label);
  for (const turn of turns) {
    const option = document.createElement('option');
    option.value = String(turn);
    option.textContent = trans.__('turn %1', turn);
    option.selected = turn === chosen;
    select.append(option);
  }
  return select;
}

/** The pane: its pickers and the painted diff (or why there is none). */
export class DiffPane {
  readonly node: HTMLElement;

  private readonly _trans: TranslationBundle;

  constructor(
    private _file: string,
    private _id: string,
    trans: TranslationBundle = nullTranslator.load('nbagent')
  ) {
    this._trans = trans;
    this.node = el('div', 'jp-nbagent-diff');
    this.node.hidden = true;
  }

  /** Show or hide the pane; shown, it fetches the diff for the chosen turns. */
  async toggle(): Promise<void> {
    this.node.hidden = !this.node.hidden;
    if (!this.node.hidden) {
      await this.show();
    }
  }

  async show(turn?: number, againstTurn?: number): Promise<void> {
    this.node.dataset.state = 'loading';
    try {
      const answer = await fetchDiff(this._file, this._id, turn, againstTurn);
      if (answer.diff === null) {
        this.node.replaceChildren(el('div', 'jp-nbagent-diff-none', answer.why ?? ''));
        this.node.dataset.state = 'none';
        return;
      }
      const bar = el('div', 'jp-nbagent-diff-bar');
      const trans = this._trans;
      const a = picker(trans.__('Parent turn (a)'), answer.turns_a, answer.turn_a, 'a', trans);
      const b = picker(trans.__('This fork turn (b)'), answer.turns_b, answer.turn_b, 'b', trans);
      const change = (): void => void this.show(Number(b.value), Number(a.value));
      a.addEventListener('change', change);
      b.addEventListener('change', change);
      bar.append(el('span', '', trans.__('Diff with parent: a')), a, el('span', '', 'b'), b);
      this.node.replaceChildren(bar, diffView(answer.diff));
      this.node.dataset.state = 'ok';
    } catch (error) {
      this.node.replaceChildren(el('div', 'jp-nbagent-diff-error', (error as Error).message));
      this.node.dataset.state = 'error';
    }
  }
}
