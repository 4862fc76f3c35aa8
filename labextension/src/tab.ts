/**
 * A session's timeline in a main-area tab: read-only, painted by the same painter as saved outputs,
 * and following the session while another kernel writes it (it asks for a new bundle only when the
 * log has grown: the server answers 204 otherwise).
 *
 * However long the session, the tab asks for its newest turns only (a window, which the server
 * folds without reading the whole log) and paints earlier turns a page at a time, on demand
 * ("Show earlier turns"), so the DOM holds what the user asked to see. While the server is still
 * folding a long tail (the bundle's `seq` behind the log's `log_seq`), the tab asks again at once.
 */

import { MainAreaWidget, ToolbarButton } from '@jupyterlab/apputils';
import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { caretDownIcon, caretUpIcon, downloadIcon, refreshIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { download, fetchTranscript, fileSessions, ISession } from './api';
import { DiffPane, IForkChoice } from './diffpane';
import type { ISessionRow } from './panel';
import { WhatIfPane } from './whatif';
import { MarkdownFill } from './markdown';
import { el, IBundle, IForkedNode, shown, TimelineView } from './paint';
import { TurnJump } from './jump';
import { fetchWindow, IWindowBundle } from './windows';

type SessionRef = Pick<ISession, 'file' | 'id' | 'label' | 'db'>;

/** How often a visible tab asks whether the session grew, and a hidden one. */
export const FOLLOW_MS = 1000;
export const HIDDEN_MS = 5000;
/**
 * A database's session is followed by waiting: each request asks the server to answer as soon as
 * the session moves, or after this many seconds (the server's one listener of that database wakes
 * it), and the next is asked at once.
 */
export const WAIT_S = 25;
/** The label of a session with no title and no prompt (the server's words). */
export const NO_PROMPT = '(no prompt yet)';
/** Turns a tab asks for first (the newest), and per "Show earlier turns". */
export const WINDOW_TURNS = 20;
export const PAGE_TURNS = 20;
/** Every how many refreshes the tab asks the listing whether forks came or went. */
const LINEAGE_EVERY = 5;
/** How close to the end (px) still counts as "at the newest turns", so the tab keeps following. */
const AT_END_PX = 32;

export class SessionTimeline extends Widget {
  constructor(
    public session: SessionRef,
    markdown: MarkdownFill | null = null,
    openSession: ((session: SessionRef) => void) | null = null,
    trans: TranslationBundle = nullTranslator.load('nbagent')
  ) {
    super();
    this._openSession = openSession;
    this._trans = trans;
    this._markdown = markdown;
    this._view = new TimelineView({ note: trans.__('read-only'), markdown });
    this._earlier = el('button', 'jp-Button jp-mod-styled jp-mod-small jp-nbagent-earlier') as HTMLButtonElement;
    this._earlier.type = 'button';
    this._earlier.hidden = true;
    this._earlier.addEventListener('click', () => void this.showEarlier());
    this._view.node.insertBefore(this._earlier, this._view.node.querySelector(':scope > .nba-scroll'));
    this.addClass('jp-nbagent-tab');
    this.node.dataset.file = session.file;
    this.node.dataset.session = session.id;
    if (session.db) {
      this.node.dataset.db = session.db;
    }
    this._status = el('div', 'jp-nbagent-tab-status', trans.__('loading…'));
    this._fork = el('div', 'jp-nbagent-tab-fork');
    this._fork.hidden = true;
    this.node.append(this._status, this._fork, this._view.node);
    this.node.prepend(new TurnJump(this, trans).node); // "Go to turn" (jump.ts)
    // Like a log viewer: open at the newest turns and keep following them while the view is at
    // the end; scrolled up, it stays where the user put it.
    this.node.addEventListener('scroll', () => {
      this._stick = this.node.scrollHeight - this.node.scrollTop - this.node.clientHeight <= AT_END_PX;
    });
    // Content also grows after a paint (answers' Markdown renders asynchronously): follow that too.
    this._resize = new ResizeObserver(() => {
      if (this._stick) {
        this.scrollToNewest();
      }
    });
    this._resize.observe(this._view.node);
  }

  dispose(): void {
    this._resize.disconnect();
    super.dispose();
  }

  /**
   * Called with whether this session is a fork and the forks of it in its file (the listing's
   * `parent`), when first known and when they change: the toolbar offers "Diff with parent" on a
   * fork and "Compare with fork…" on a parent.
   */
  onLineage: ((isFork: boolean, forks: IForkChoice[]) => void) | null = null;

  private async _lineage(): Promise<void> {
    const rows = (await fileSessions(this.session).catch(() => [])) as ISessionRow[];
    const me = rows.find(r => 'id' in r && r.id === this.session.id);
    const forks = rows
      .filter(r => 'id' in r && r.parent === this.session.id)
      .map(r => ({ id: r.id, label: r.label }));
    const key = JSON.stringify([!!me?.parent, forks]);
    if (key !== this._lineageKey && !this.isDisposed) {
      this._lineageKey = key;
      this.onLineage?.(!!me?.parent, forks);
    }
  }

  /**
   * Fetch now (if the log grew) and paint; resolves once painted. With `wait`, a database's
   * session is asked to answer once it moves (at most `WAIT_S` seconds later).
   */
  async refresh(wait = false): Promise<void> {
    if (this._refreshes++ % LINEAGE_EVERY === 0) {
      void this._lineage();
    }
    try {
      const known = this._view.bundle?.seq;
      const query = { window: WINDOW_TURNS, known, wait: wait && known !== undefined ? WAIT_S : undefined };
      const bundle = await fetchWindow(this.session, this.session.id, query);
      if (this.isDisposed) {
        return;
      }
      if (bundle) {
        this._paintWindow(bundle);
      }
      const seq = this._view.bundle?.seq ?? 0;
      this._lagging = bundle !== null && bundle.seq < bundle.log_seq;
      this._status.textContent = this._lagging
        ? this._trans.__(
            '%1 · reading the log: %2 of %3 events…',
            this.session.file,
            seq.toLocaleString(),
            bundle!.log_seq.toLocaleString()
          )
        : this._trans.__('%1 · following · checked %2', this.session.file, new Date().toLocaleTimeString());
      this._status.dataset.state = this._lagging ? 'reading' : 'ok';
    } catch (error) {
      this._status.textContent = `${this.session.file}: ${(error as Error).message}`;
      this._status.dataset.state = 'error';
    }
  }

  /** Called with the session's label when it changes (its first prompt arrived, it was titled). */
  onLabel: ((label: string) => void) | null = null;

  scrollToNewest(): void {
    this.node.scrollTop = this.node.scrollHeight;
  }

  scrollToTop(): void {
    this.node.scrollTop = 0;
  }

  /** Paint the newest turns' window (a window that moved starts the earlier pages afresh). */
  private _paintWindow(bundle: IWindowBundle): void {
    if (bundle.first_turn !== this._windowFrom) {
      this._pages.forEach(p => p.remove());
      this._pages = [];
      this._windowFrom = this._shownFrom = this._laterFrom = bundle.first_turn;
      this._updateLater();
    }
    this._view.render(bundle);
    this.node.dataset.seq = String(bundle.seq);
    this.node.dataset.logSeq = String(bundle.log_seq);
    this._updateEarlier();
    if (this._stick) {
      this.scrollToNewest();
    }
    void this._relabel();
    void this._paintFork(bundle);
  }

  /** Paint the page of turns before the earliest shown, above it, keeping the view where it was. */
  async showEarlier(): Promise<void> {
    const before = this._shownFrom;
    if (before <= 1 || this._loadingEarlier) {
      return;
    }
    this._loadingEarlier = true;
    this._earlier.disabled = true;
    try {
      const page = await fetchWindow(this.session, this.session.id, { window: PAGE_TURNS, before });
      if (!page || this.isDisposed || before !== this._shownFrom) {
        return;
      }
      const view = new TimelineView({ markdown: this._markdown });
      view.render(page);
      // A page's turns start closed (the painter opens a bundle's last ones): their bodies are
      // built when opened.
      view.node.querySelectorAll<HTMLDetailsElement>('details.nba-turn[open]').forEach(d => (d.open = false));
      const turns = view.node.querySelector<HTMLElement>(':scope > .nba-scroll')!;
      turns.classList.add('jp-nbagent-page');
      turns.dataset.from = String(page.first_turn);
      const anchor = this._earlier.nextElementSibling as HTMLElement | null;
      const top = anchor?.getBoundingClientRect().top ?? 0;
      this._earlier.after(turns);
      this._pages.push(turns);
      if (anchor) {
        this.node.scrollTop += anchor.getBoundingClientRect().top - top;
      }
      this._shownFrom = page.first_turn;
      this._status.dataset.state = 'ok';
    } catch (error) {
      this._status.textContent = `${this.session.file}: ${(error as Error).message}`;
      this._status.dataset.state = 'error';
    } finally {
      this._loadingEarlier = false;
      this._earlier.disabled = false;
      this._updateEarlier();
      if (this._earlier.hidden && document.activeElement === document.body) {
        this._earlier.nextElementSibling?.querySelector<HTMLElement>('summary')?.focus();
      }
    }
  }

  private _updateEarlier(): void {
    const count = Math.max(0, this._shownFrom - 1);
    this._earlier.hidden = count === 0;
    this.node.dataset.earlier = String(count);
    const page = Math.min(PAGE_TURNS, count);
    this._earlier.textContent = this._trans._n(
      'Show %1 earlier turn (%2 before turn %3)',
      'Show %1 earlier turns (%2 before turn %3)',
      page,
      count.toLocaleString(),
      this._shownFrom
    );
  }

  /**
   * A fork's tab says "forked from «parent» before turn N" above its timeline, the parent a link
   * that opens the parent's tab (when the parent is a session of the same file).
   */
  private async _paintFork(bundle: IBundle): Promise<void> {
    const forked = bundle.nodes.find((n): n is IForkedNode => n.type === 'forked' && n.parent === null);
    if (!forked || this._fork.dataset.parent === String(forked.parent_session)) {
      return;
    }
    const parentId = String(forked.parent_session);
    const rows = await fileSessions(this.session).catch(() => []);
    const parent = rows.find(r => 'id' in r && r.id === parentId) as ISession | undefined;
    const open = (): void => parent && this._openSession?.(parent);
    this._fork.replaceChildren(...forkLine(forked, parent, open, this._trans));
    this._fork.dataset.parent = parentId;
    this._fork.hidden = false;
  }

  /** A session opened before its first prompt learns its label once the log has grown. */
  private async _relabel(): Promise<void> {
    const label = this.session.label;
    if (label !== NO_PROMPT && label !== '' && label !== this.session.id) {
      return;
    }
    const rows = await fileSessions(this.session).catch(() => []);
    const row = rows.find(r => 'id' in r && r.id === this.session.id) as ISession | undefined;
    if (row && row.label !== this.session.label) {
      this.session = { ...this.session, label: row.label };
      this.onLabel?.(row.label);
    }
  }

  exportMarkdown = async (): Promise<void> => {
    const { name, text } = await fetchTranscript(this.session, this.session.id, 'md');
    download(name, text);
  };

  protected onAfterAttach(): void {
    this._follow();
  }

  protected onAfterShow(): void {
    if (this._stick) {
      this.scrollToNewest();
    }
  }

  protected onBeforeDetach(): void {
    window.clearTimeout(this._timer);
    this._timer = 0;
  }

  private _follow(): void {
    window.clearTimeout(this._timer);
    const waits = !!this.session.db && !this._lagging;
    void this.refresh(waits).then(() => {
      if (this.isAttached && !this.isDisposed) {
        // A database's session was waited for (the server answered when it moved): ask again at
        // once, unless the answer was an error.
        const waited = waits && this._status.dataset.state !== 'error';
        const wait = this._lagging || waited ? 0 : this.isVisible ? FOLLOW_MS : HIDDEN_MS;
        this._timer = window.setTimeout(() => this._follow(), wait);
      }
    });
  }

  /**
   * Show turn `turn` and scroll it into view. A turn not shown replaces the earlier pages with the
   * window around it (`turn=N`); "Show later turns" below that window pages forwards (`after=T`)
   * until it meets the newest turns, and "Show earlier turns" pages backwards from it as before.
   */
  async goToTurn(turn: number): Promise<void> {
    const shown = (t: number): boolean =>
      t >= this._windowFrom || (t >= this._shownFrom && t < this._laterFrom) || this._turnNode(t) !== null;
    if (this._windowFrom === 0) {
      throw new Error(this._trans.__('the session is still loading; try again in a moment'));
    }
    if (!shown(turn)) {
      this._pages.forEach(p => p.remove());
      this._pages = [];
      this._shownFrom = this._laterFrom = this._windowFrom;
      if (turn >= this._windowFrom - PAGE_TURNS) {
        while (this._shownFrom > turn && this._shownFrom > 1) {
          const from = this._shownFrom;
          await this.showEarlier();
          if (this._shownFrom === from) {
            break; // refused: the status line says why
          }
        }
      } else {
        const page = await fetchWindow(this.session, this.session.id, { window: PAGE_TURNS, turn });
        if (!page || this.isDisposed) {
          return;
        }
        this._earlier.after(this._pageOf(page));
        this._shownFrom = page.first_turn;
        this._laterFrom = (page.last_turn ?? page.first_turn) + 1;
        this._updateEarlier();
        this._updateLater();
      }
    }
    const node = this._turnNode(turn);
    if (!node) {
      throw new Error(this._trans.__('turn %1 is not in this session', turn));
    }
    node.open = true;
    this._stick = false;
    // Its head just below the sticky "Go to turn" bar, not under it.
    const bar = this.node.querySelector<HTMLElement>(':scope > .jp-nbagent-jump')?.getBoundingClientRect().bottom;
    const top = bar ?? this.node.getBoundingClientRect().top;
    this.node.scrollTop += node.getBoundingClientRect().top - top - 4;
    node.querySelector<HTMLElement>('summary')?.focus({ preventScroll: true });
  }

  /** Paint the page of turns after the jumped-to window, below it, towards the newest turns. */
  async showLater(): Promise<void> {
    const after = this._laterFrom - 1;
    const count = Math.min(PAGE_TURNS, this._windowFrom - this._laterFrom);
    if (count <= 0 || this._later.disabled) {
      return;
    }
    this._later.disabled = true;
    try {
      const page = await fetchWindow(this.session, this.session.id, { window: count, after });
      if (page && !this.isDisposed && after === this._laterFrom - 1) {
        this._later.before(this._pageOf(page));
        this._laterFrom = (page.last_turn ?? after) + 1;
      }
    } catch (error) {
      this._status.textContent = `${this.session.file}: ${(error as Error).message}`;
      this._status.dataset.state = 'error';
    } finally {
      this._later.disabled = false;
      this._updateLater();
    }
  }

  private _turnNode(turn: number): HTMLDetailsElement | null {
    return this.node.querySelector<HTMLDetailsElement>(`details.nba-turn[data-id="turn-${turn}"]`);
  }

  /** A page's turns, closed (their bodies are built when opened), as a block of the view. */
  private _pageOf(page: IWindowBundle): HTMLElement {
    const view = new TimelineView({ markdown: this._markdown });
    view.render(page);
    view.node.querySelectorAll<HTMLDetailsElement>('details.nba-turn[open]').forEach(d => (d.open = false));
    const turns = view.node.querySelector<HTMLElement>(':scope > .nba-scroll')!;
    turns.classList.add('jp-nbagent-page');
    turns.dataset.from = String(page.first_turn);
    this._pages.push(turns);
    return turns;
  }

  /** "Show later turns" sits below a jumped-to window while turns lie between it and the newest. */
  private _updateLater(): void {
    const count = Math.max(0, this._windowFrom - this._laterFrom);
    this.node.dataset.later = String(count);
    if (count === 0) {
      this._later.remove(); // out of the DOM: "Show earlier turns" anchors on the next block
      return;
    }
    this._view.node.insertBefore(this._later, this._view.node.querySelector(':scope > .nba-scroll:not(.jp-nbagent-page)'));
    this._later.textContent = this._trans._n(
      'Show %1 later turn (%2 before turn %3)',
      'Show %1 later turns (%2 before turn %3)',
      Math.min(PAGE_TURNS, count),
      count.toLocaleString(),
      this._windowFrom
    );
  }

  private _later = ((): HTMLButtonElement => {
    const button = el('button', 'jp-Button jp-mod-styled jp-mod-small jp-nbagent-later') as HTMLButtonElement;
    button.type = 'button';
    button.addEventListener('click', () => void this.showLater());
    return button;
  })();
  /** The first turn after the jumped-to pages that is not shown (`_windowFrom` when none). */
  private _laterFrom = 0;
  private _refreshes = 0;
  private _lineageKey = '';
  private _markdown: MarkdownFill | null;
  private _trans: TranslationBundle;
  private _earlier: HTMLButtonElement;
  private _pages: HTMLElement[] = [];
  /** The first turn of the newest window, and of everything shown (earlier pages included). */
  private _windowFrom = 0;
  private _shownFrom = 0;
  private _loadingEarlier = false;
  private _lagging = false;
  private _openSession: ((session: SessionRef) => void) | null;
  private _fork: HTMLElement;
  private _view: TimelineView;
  private _status: HTMLElement;
  private _timer = 0;
  private _stick = true;
  private _resize: ResizeObserver;
}

/** The words of a fork's line: where it was forked, the parent a link when it is in this file. */
function forkLine(
  forked: IForkedNode,
  parent: ISession | undefined,
  open: () => void,
  trans: TranslationBundle
): (HTMLElement | string)[] {
  const turn = forked.turn;
  const where =
    turn !== null && turn !== undefined ? trans.__('before turn %1', turn) : trans.__('at seq %1', forked.at);
  const id = String(forked.parent_session);
  if (!parent) {
    return [trans.__('forked from session %1 %2 (not in this file)', id, where)];
  }
  const link = el('button', 'jp-nbagent-link', parent.label, { session: id }) as HTMLButtonElement;
  link.type = 'button';
  link.title = shown(trans.__('Open the timeline of %1 (session %2)', parent.label, id));
  link.addEventListener('click', open);
  // The link takes the place of the parent in the translated sentence.
  const [before, after] = trans.__('forked from %1 %2', '\u0000', where).split('\u0000');
  return [before, link, after ?? ''];
}

export function sessionTab(
  session: SessionRef,
  markdown: MarkdownFill | null = null,
  openSession: ((session: SessionRef) => void) | null = null,
  trans: TranslationBundle = nullTranslator.load('nbagent')
): MainAreaWidget<SessionTimeline> {
  const content = new SessionTimeline(session, markdown, openSession, trans);
  const widget = new MainAreaWidget({ content });
  widget.id = `nbagent-session-${session.id}`;
  const setLabel = (label: string): void => {
    const visible = shown(label);
    widget.title.label = visible.length > 40 ? `${visible.slice(0, 39)}…` : visible;
    widget.title.caption = shown(trans.__('%1\n%2 · session %3', label, session.file, session.id));
  };
  setLabel(session.label);
  content.onLabel = setLabel;
  widget.title.closable = true;
  widget.addClass('jp-nbagent-session');
  widget.toolbar.addItem(
    'export',
    new ToolbarButton({
      icon: downloadIcon,
      label: trans.__('Export Markdown'),
      tooltip: trans.__('Download the transcript as Markdown'),
      onClick: () => void content.exportMarkdown()
    })
  );
  widget.toolbar.addItem(
    'top',
    new ToolbarButton({
      icon: caretUpIcon,
      label: trans.__('Top'),
      tooltip: trans.__('To the earliest turn shown (earlier ones load from there)'),
      onClick: () => content.scrollToTop()
    })
  );
  widget.toolbar.addItem(
    'newest',
    new ToolbarButton({
      icon: caretDownIcon,
      label: trans.__('Newest'),
      tooltip: trans.__('To the newest turns (the tab follows them from there)'),
      onClick: () => content.scrollToNewest()
    })
  );
  // A fork's turn beside its parent's ("Diff with parent", forks only), a parent's beside one of
  // its forks' ("Compare with fork…", when it has forks): diffpane.ts.
  const diff = new DiffPane(session, session.id, trans);
  // "What if…" and "Which context mattered?" on a finished turn, run in a notebook's kernel that
  // holds the session (whatif.ts).
  const whatif = new WhatIfPane(session, trans);
  content.node.insertBefore(diff.node, content.node.querySelector(':scope > .nbagent') ?? null);
  content.node.insertBefore(whatif.node, diff.node);
  const diffButton = new ToolbarButton({
    label: trans.__('Diff with parent'),
    tooltip: trans.__('This fork\u2019s turn beside its parent\u2019s, step by step'),
    onClick: () => void diff.toggle()
  });
  const compareButton = new ToolbarButton({
    label: trans.__('Compare with fork\u2026'),
    tooltip: trans.__('A fork\u2019s turn beside this session\u2019s, step by step'),
    onClick: () => void diff.compare(forks)
  });
  let forks: IForkChoice[] = [];
  diffButton.hide();
  compareButton.hide();
  content.onLineage = (isFork, found) => {
    forks = found;
    diffButton.setHidden(!isFork);
    compareButton.setHidden(found.length === 0);
  };
  widget.toolbar.addItem('diff', diffButton);
  widget.toolbar.addItem('compare', compareButton);
  widget.toolbar.addItem(
    'whatif',
    new ToolbarButton({
      label: trans.__('What if\u2026'),
      tooltip: trans.__('Change when the context of a finished turn arrived, and replay it in a fork'),
      onClick: () => void whatif.open('whatif')
    })
  );
  widget.toolbar.addItem(
    'why',
    new ToolbarButton({
      label: trans.__('Which context mattered?'),
      tooltip: trans.__('Replay a finished turn once without each piece of its context, and rank them'),
      onClick: () => void whatif.open('why')
    })
  );
  widget.toolbar.addItem(
    'refresh',
    new ToolbarButton({
      icon: refreshIcon,
      tooltip: trans.__('Check for new events now'),
      onClick: () => void content.refresh()
    })
  );
  return widget;
}
