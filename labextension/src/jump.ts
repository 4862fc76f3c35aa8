/**
 * "Go to turn" in a session's tab: a turn number, or a search over the turns' titles (the server
 * reads only what it needs, nbagent/labserver/jump.py), and the tab loads that turn's window and
 * scrolls it into view. Enter in the number jumps; Enter in the search box searches, the arrow
 * keys move through the results and Enter on one jumps there. Titles come from the log: they
 * reach the DOM as text only (the painter's `el`, i.e. `textContent`).
 */

import { TranslationBundle } from '@jupyterlab/translation';

import { el } from './paint';
import { findTurns, IFound } from './windows';

/** What the control needs of its tab. */
export interface IJumpHost {
  session: { file: string; db?: string; id: string };
  /** Show turn `turn` (loading its window when it is not shown) and scroll it into view. */
  goToTurn(turn: number): Promise<void>;
}

/** Matches a search shows per page ("More" asks for the next). */
export const FIND_PAGE = 20;

export class TurnJump {
  readonly node: HTMLElement;

  constructor(
    private _host: IJumpHost,
    private _trans: TranslationBundle
  ) {
    const trans = _trans;
    this.node = el('div', 'jp-nbagent-jump');
    this.node.setAttribute('role', 'search');
    this.node.setAttribute('aria-label', trans.__('Go to a turn'));

    const label = el('label', 'jp-nbagent-jump-label', trans.__('Go to turn')) as HTMLLabelElement;
    this._number = el('input', 'jp-mod-styled jp-nbagent-jump-turn') as HTMLInputElement;
    this._number.type = 'number';
    this._number.min = '1';
    this._number.step = '1';
    this._number.id = `jp-nbagent-jump-${_host.session.id}`;
    this._number.title = trans.__('A turn number; Enter jumps to it');
    label.htmlFor = this._number.id;
    const go = el('button', 'jp-Button jp-mod-styled jp-mod-small jp-mod-accept', trans.__('Go')) as HTMLButtonElement;
    go.type = 'button';
    go.addEventListener('click', () => void this._goToNumber());
    this._number.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        event.preventDefault();
        void this._goToNumber();
      }
    });
    const numberGroup = el('div', 'jp-InputGroup jp-nbagent-jump-group');
    numberGroup.append(this._number);

    this._find = el('input', 'jp-mod-styled jp-nbagent-jump-find') as HTMLInputElement;
    this._find.type = 'search';
    this._find.placeholder = trans.__('Find a turn by its title…');
    this._find.setAttribute('aria-label', trans.__('Find a turn by its title'));
    this._find.title = trans.__('Words of a turn\u2019s title; Enter searches, \u2193 goes to the results');
    this._find.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        event.preventDefault();
        void this._search(0);
      } else if (event.key === 'ArrowDown') {
        event.preventDefault();
        this._results.querySelector<HTMLElement>('button')?.focus();
      } else if (event.key === 'Escape') {
        this._clear();
      }
    });
    const findGroup = el('div', 'jp-InputGroup jp-nbagent-jump-group jp-nbagent-jump-findgroup');
    findGroup.append(this._find);

    this._status = el('span', 'jp-nbagent-jump-status');
    this._status.setAttribute('aria-live', 'polite');
    const row = el('div', 'jp-nbagent-jump-row');
    row.append(label, numberGroup, go, findGroup, this._status);
    this._results = el('ul', 'jp-nbagent-jump-results');
    this._results.setAttribute('aria-label', trans.__('Turns found'));
    this._results.hidden = true;
    this._results.addEventListener('keydown', event => this._moveInResults(event));
    this.node.append(row, this._results);
  }

  /** Jump to the turn the number input holds. */
  private async _goToNumber(): Promise<void> {
    const raw = this._number.value.trim();
    const turn = Number(raw);
    if (!Number.isInteger(turn) || turn < 1) {
      this._say(this._trans.__('A turn is a whole number from 1, not \u201c%1\u201d', raw), 'error');
      return;
    }
    await this._go(turn);
  }

  private async _go(turn: number): Promise<void> {
    this._say(this._trans.__('going to turn %1…', turn), 'busy');
    try {
      await this._host.goToTurn(turn);
      this._say(this._trans.__('turn %1', turn), 'ok');
    } catch (error) {
      this._say((error as Error).message, 'error');
    }
  }

  /** Search the titles of the turns after `after` (0: from the first) and list what is found. */
  private async _search(after: number): Promise<void> {
    const text = this._find.value.trim();
    if (!text) {
      this._clear();
      return;
    }
    if (after === 0) {
      this._results.replaceChildren(); // no stale results while the new ones come
      this._results.hidden = true;
    }
    this._say(this._trans.__('searching…'), 'busy');
    let found: IFound;
    try {
      found = await findTurns(this._host.session, this._host.session.id, text, after, FIND_PAGE);
    } catch (error) {
      this._say((error as Error).message, 'error');
      return;
    }
    this._results.querySelector('.jp-nbagent-jump-more')?.remove();
    for (const match of found.matches) {
      const item = el('li');
      const button = el('button', 'jp-nbagent-jump-result', null, { turn: match.turn }) as HTMLButtonElement;
      button.type = 'button';
      button.append(el('b', '', this._trans.__('Turn %1', match.turn)), el('span', '', match.title));
      button.addEventListener('click', () => void this._go(match.turn));
      item.append(button);
      this._results.append(item);
    }
    const shown = this._results.querySelectorAll('.jp-nbagent-jump-result').length;
    if (found.next !== null) {
      const item = el('li', 'jp-nbagent-jump-more');
      const more = el('button', 'jp-Button jp-mod-styled jp-mod-small', null) as HTMLButtonElement;
      more.type = 'button';
      more.textContent = this._trans.__('Search on after turn %1', found.next);
      more.addEventListener('click', () => void this._search(found.next!));
      item.append(more);
      this._results.append(item);
    }
    this._results.hidden = this._results.childElementCount === 0;
    this._say(
      shown === 0 && found.next === null
        ? this._trans.__('no turn\u2019s title holds \u201c%1\u201d', text)
        : this._trans._n('%1 turn found', '%1 turns found', shown, shown) +
            (found.next === null ? '' : this._trans.__(' (up to turn %1)', found.next)),
      shown === 0 && found.next === null ? 'none' : 'ok'
    );
  }

  /** ↑/↓ move between the results (↑ from the first goes back to the search box); Escape closes. */
  private _moveInResults(event: KeyboardEvent): void {
    const buttons = [...this._results.querySelectorAll<HTMLButtonElement>('button')];
    const at = buttons.indexOf(document.activeElement as HTMLButtonElement);
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const next = at + (event.key === 'ArrowDown' ? 1 : -1);
      (next < 0 ? this._find : buttons[Math.min(next, buttons.length - 1)])?.focus();
    } else if (event.key === 'Escape') {
      this._clear();
      this._find.focus();
    }
  }

  private _clear(): void {
    this._results.replaceChildren();
    this._results.hidden = true;
    this._say('', 'ok');
  }

  private _say(text: string, state: string): void {
    this._status.textContent = text;
    this._status.dataset.state = state;
  }

  private _number: HTMLInputElement;
  private _find: HTMLInputElement;
  private _results: HTMLElement;
  private _status: HTMLElement;
}
