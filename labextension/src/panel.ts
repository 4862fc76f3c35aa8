/**
 * The "Agent sessions" side panel: the sessions of the `*.nbagent.sqlite` files in the file
 * browser's current folder (title or first prompt, turns, events, last activity, model), and below
 * them one root per database the server serves (a team's PostgreSQL store, named by its name), its
 * sessions listed once it is opened. It follows the file browser's folder and refreshes when the
 * folder's files change, when it is shown, or on demand. Every string from a session goes into the
 * DOM as text.
 */

import { nullTranslator, TranslationBundle } from '@jupyterlab/translation';
import { downloadIcon, LabIcon, refreshIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import {
  ago,
  databaseSessions,
  download,
  fetchTranscript,
  ISession,
  IUnreadable,
  listDatabases,
  Listing,
  listSessions
} from './api';
import { el, shown } from './paint';

/** A session as the listing gives it, with the session it was forked from (in the same file). */
export type ISessionRow = ISession & { parent?: string | null };

/** A session and the sessions forked from it, in the order of the listing. */
export interface ISessionNode {
  session: ISessionRow;
  forks: ISessionNode[];
}

/**
 * The listing as a forest: a fork whose parent is a session of the same file goes under its parent
 * (forks of forks under theirs); the others, and unreadable files, stay in the listing's order.
 */
export function nestForks(rows: Listing): (ISessionNode | IUnreadable)[] {
  const nodes = new Map<string, ISessionNode>();
  const key = (r: { file: string; db?: string }, id: string): string => `${r.db ?? ''}\n${r.file}\n${id}`;
  for (const r of rows) {
    if (!('error' in r)) {
      nodes.set(key(r, r.id), { session: r, forks: [] });
    }
  }
  const out: (ISessionNode | IUnreadable)[] = [];
  for (const r of rows) {
    if ('error' in r) {
      out.push(r);
      continue;
    }
    const node = nodes.get(key(r, r.id))!;
    const parentId = (r as ISessionRow).parent;
    const parent = parentId ? nodes.get(key(r, parentId)) : undefined;
    if (parent && !isAncestor(node, parent)) {
      parent.forks.push(node);
    } else {
      out.push(node);
    }
  }
  return out;
}

/** Whether `node` is `other` or holds it among its forks (a cycle in damaged metadata). */
function isAncestor(node: ISessionNode, other: ISessionNode): boolean {
  return node === other || node.forks.some(f => isAncestor(f, other));
}

export interface ISessionsPanelOptions {
  /** Open a session's timeline tab. */
  open: (session: ISession) => void;
  /** The user-facing words (JupyterLab's translator, domain `nbagent`). */
  trans?: TranslationBundle;
}

/** Signals and state of the folder to follow (the default file browser's model, in practice). */
export interface IFolderSource {
  readonly path: string;
  items(): Iterable<{ name: string; last_modified: string; size?: number | null }>;
}

/** A small button: an optional icon and a label, with a tooltip. */
function button(cls: string, icon: LabIcon | null, label: string, tooltip: string, onClick: () => void): HTMLElement {
  const b = el('button', `jp-nbagent-button ${cls}`);
  b.title = tooltip;
  b.setAttribute('aria-label', tooltip);
  if (icon) {
    b.append(icon.element({ tag: 'span', className: 'jp-nbagent-button-icon' }));
  }
  if (label) {
    b.append(el('span', '', label));
  }
  b.addEventListener('click', e => {
    e.stopPropagation();
    onClick();
  });
  return b;
}

/** How often a shown panel asks the server for its folder's sessions. */
export const POLL_MS = 3000;

const SESSION_FILE = /(^|\.)nbagent\.sqlite(-wal)?$/;

export class SessionsPanel extends Widget {
  constructor(options: ISessionsPanelOptions) {
    super();
    this._open = options.open;
    const trans = (this._trans = options.trans ?? nullTranslator.load('nbagent'));
    this.id = 'nbagent-sessions';
    this.addClass('jp-nbagent-panel');
    this.title.caption = trans.__('Agent sessions');
    const head = el('div', 'jp-nbagent-panel-head');
    head.append(el('span', 'jp-nbagent-panel-title', trans.__('Agent sessions')));
    const refresh = button('jp-nbagent-refresh', refreshIcon, '', trans.__('Refresh the list of sessions'), () => void this.refresh());
    this._folderLine = el('div', 'jp-nbagent-panel-folder');
    this._list = el('ul', 'jp-nbagent-list');
    // A tree (WAI-ARIA): one Tab stop (the current row), arrows move and open/close, Enter opens.
    this._list.setAttribute('role', 'tree');
    this._list.setAttribute('aria-label', trans.__('Agent sessions'));
    this._list.addEventListener('keydown', e => this._onKey(e));
    this._list.addEventListener('focusin', e => {
      const item = (e.target as HTMLElement).closest<HTMLElement>('[role="treeitem"]');
      if (item && this._list.contains(item)) {
        this._setCurrent(item);
      }
    });
    this._message = el('div', 'jp-nbagent-panel-message');
    this.node.append(head, this._folderLine, this._message, this._list);
    head.append(refresh);
  }

  /** The folder listed (relative to the server root, `""` for the root). */
  get folder(): string {
    return this._folder;
  }

  /** List `folder` (refreshes when it differs from the folder listed). */
  setFolder(folder: string): void {
    if (folder !== this._folder) {
      this._folder = folder;
      this._signature = '';
      void this.refresh();
    }
  }

  /** Refresh if the session files in `source` (the file browser's listing) changed. */
  noticeFiles(source: IFolderSource): void {
    if (source.path !== this._folder) {
      this.setFolder(source.path);
      return;
    }
    const parts: string[] = [];
    for (const f of source.items()) {
      if (SESSION_FILE.test(f.name)) {
        parts.push(`${f.name}:${f.last_modified}:${f.size ?? ''}`);
      }
    }
    const signature = parts.sort().join('|');
    if (signature !== this._signature) {
      this._signature = signature;
      void this.refresh();
    }
  }

  /** Fetch the listing and paint it; concurrent calls share one fetch after the running one. */
  async refresh(): Promise<void> {
    if (this._running) {
      this._again = true;
      return this._running;
    }
    this._running = this._fetch();
    try {
      await this._running;
    } finally {
      this._running = null;
    }
    if (this._again) {
      this._again = false;
      await this.refresh();
    }
  }

  /** While shown, the list polls the server, so a session another kernel writes stays current
   * without the file browser noticing its files first. */
  protected onAfterShow(): void {
    void this.refresh();
    window.clearInterval(this._poll);
    this._poll = window.setInterval(() => {
      if (this.isVisible && !document.hidden) {
        void this.refresh();
      }
    }, POLL_MS);
  }

  protected onAfterHide(): void {
    window.clearInterval(this._poll);
    this._poll = 0;
  }

  protected onBeforeDetach(): void {
    this.onAfterHide();
  }

  private async _fetch(): Promise<void> {
    const folder = this._folder;
    this.node.dataset.state = 'loading';
    try {
      const [rows] = await Promise.all([listSessions(folder), this._fetchDatabases()]);
      if (folder === this._folder) {
        this._paint(rows);
      }
    } catch (error) {
      this._list.replaceChildren();
      this._message.textContent = this._trans.__('Could not list sessions in /%1: %2', folder, (error as Error).message);
      this.node.dataset.state = 'error';
    }
  }

  /** The databases the server serves (asked once), and the sessions of those opened in the tree. */
  private async _fetchDatabases(): Promise<void> {
    if (this._databases === null) {
      try {
        this._databases = await listDatabases();
      } catch {
        return; // an older server, or none reachable: the folder's listing says so
      }
    }
    await Promise.all(
      this._databases
        .filter(name => this._expanded.get(this._dbKey(name)))
        .map(async name => {
          try {
            this._dbRows.set(name, await databaseSessions(name));
          } catch (error) {
            this._dbRows.set(name, error as Error);
          }
        })
    );
  }

  private _dbKey(name: string): string {
    return `${name}\n\n`;
  }

  /** A database's root: its name, and its sessions (or why they could not be listed) once opened. */
  private _database(name: string): HTMLElement {
    const trans = this._trans;
    const li = el('li', 'jp-nbagent-row jp-nbagent-db', undefined, { db: name });
    li.tabIndex = -1;
    li.setAttribute('role', 'treeitem');
    li.setAttribute('aria-level', '1');
    li.title = trans.__('Sessions of the database %1, served by the Jupyter server · → or click to open', name);
    li.append(el('div', 'jp-nbagent-row-label', name), el('div', 'jp-nbagent-row-meta', trans.__('database')));
    const found = this._dbRows.get(name);
    let kids: HTMLElement[] = [];
    if (found instanceof Error) {
      const item = el('li', 'jp-nbagent-row jp-nbagent-unreadable', undefined, { db: name, session: 'error' });
      item.setAttribute('role', 'treeitem');
      item.setAttribute('aria-level', '2');
      item.tabIndex = -1;
      item.append(el('div', 'jp-nbagent-row-meta', trans.__('Could not list the sessions of %1: %2', name, found.message)));
      kids = [item];
    } else if (found) {
      kids = nestForks(found).map(r => ('error' in r ? this._unreadable(r) : this._tree(r, 2)));
      li.dataset.count = String(found.filter(r => !('error' in r)).length);
      if (!found.length) {
        const none = el('li', 'jp-nbagent-row jp-nbagent-none', undefined, { db: name, session: 'none' });
        none.setAttribute('role', 'treeitem');
        none.setAttribute('aria-level', '2');
        none.tabIndex = -1;
        none.append(el('div', 'jp-nbagent-row-meta', trans.__('No agent sessions in this database yet.')));
        kids = [none];
      }
    }
    this._group(li, kids, false);
    return li;
  }

  private _paint(rows: Listing): void {
    this._folderLine.textContent = `/${this._folder}`;
    const items = nestForks(rows).map(r => ('error' in r ? this._unreadable(r) : this._tree(r, 1)));
    items.push(...(this._databases ?? []).map(name => this._database(name)));
    const focus = this._focused();
    this._list.replaceChildren(...items);
    this._refocus(focus);
    this._roving();
    this._message.textContent = rows.length
      ? ''
      : this._trans.__(
          'No agent sessions in this folder. A notebook using nbagent keeps them in <notebook>.nbagent.sqlite beside it.'
        );
    this.node.dataset.state = 'ready';
    this.node.dataset.count = String(rows.filter(r => !('error' in r)).length);
    this.node.dataset.folder = this._folder;
  }

  /** The focused row (file and session) and the class of its focused button, if any. */
  private _focused(): { db: string; file: string; session: string; button: string } | null {
    const active = document.activeElement as HTMLElement | null;
    const li = active?.closest<HTMLElement>('[role="treeitem"]');
    if (!active || !li || !this._list.contains(li)) {
      return null;
    }
    const button = active === li ? '' : Array.from(active.classList).find(c => c.startsWith('jp-nbagent-') && c !== 'jp-nbagent-button') ?? '';
    return { db: li.dataset.db ?? '', file: li.dataset.file ?? '', session: li.dataset.session ?? '', button };
  }

  /** A repaint keeps the keyboard focus on the same row (and button). */
  private _refocus(focus: { db: string; file: string; session: string; button: string } | null): void {
    if (!focus) {
      return;
    }
    const li = Array.from(this._list.querySelectorAll<HTMLElement>('[role="treeitem"]')).find(
      r =>
        (r.dataset.db ?? '') === focus.db &&
        (r.dataset.file ?? '') === focus.file &&
        (r.dataset.session ?? '') === focus.session
    );
    if (li) {
      this._current = this._key(li);
    }
    const target = focus.button ? li?.querySelector<HTMLElement>(`.${focus.button}`) : li;
    target?.focus();
  }

  /**
   * A session's row with its forks nested under it (a group in the row): ordinary forks shown,
   * attribution runs (SPEC §11.5) in one collapsed "Which context mattered" item of their own.
   */
  private _tree(node: ISessionNode, level: number): HTMLElement {
    const li = this._row(node.session, level);
    const plain = node.forks.filter(f => f.session.purpose !== 'attribution');
    const runs = node.forks.filter(f => f.session.purpose === 'attribution');
    const kids: HTMLElement[] = plain.map(f => this._tree(f, level + 1));
    if (runs.length) {
      const trans = this._trans;
      const holder = el('li', 'jp-nbagent-row jp-nbagent-runs', undefined, {
        file: node.session.file,
        session: `${node.session.id}/attribution`
      });
      holder.setAttribute('role', 'treeitem');
      holder.setAttribute('aria-level', String(level + 1));
      holder.append(
        el('div', 'jp-nbagent-row-label', trans._n('Which context mattered: %1 run', 'Which context mattered: %1 runs', runs.length))
      );
      this._group(holder, runs.map(f => this._tree(f, level + 2)), false);
      kids.push(holder);
    }
    if (kids.length) {
      this._group(li, kids, true);
    }
    return li;
  }

  /** Put `kids` in a group under `li`, expanded unless the user closed it (or `open` is false). */
  private _group(li: HTMLElement, kids: HTMLElement[], open: boolean): void {
    const group = el('ul', 'jp-nbagent-forks');
    group.setAttribute('role', 'group');
    group.append(...kids);
    li.append(group);
    const expanded = this._expanded.get(this._key(li)) ?? open;
    li.setAttribute('aria-expanded', String(expanded));
    group.hidden = !expanded;
    li.addEventListener('click', e => {
      if (e.target === li || (e.target as HTMLElement).parentElement === li) {
        e.stopPropagation();
        this._setCurrent(li);
        if (li.classList.contains('jp-nbagent-runs') || li.classList.contains('jp-nbagent-db')) {
          this._expand(li, li.getAttribute('aria-expanded') !== 'true');
        }
      }
    });
  }

  private _key(li: HTMLElement): string {
    return `${li.dataset.db ?? ''}\n${li.dataset.file ?? ''}\n${li.dataset.session ?? ''}`;
  }

  private _expand(li: HTMLElement, open: boolean): void {
    const group = li.querySelector<HTMLElement>(':scope > [role="group"]');
    if (!group) {
      return;
    }
    li.setAttribute('aria-expanded', String(open));
    group.hidden = !open;
    this._expanded.set(this._key(li), open);
    if (open && li.classList.contains('jp-nbagent-db')) {
      void this.refresh(); // a database's sessions are listed once it is opened
    }
  }

  /** The rows a person can reach now (inside no closed group), in order. */
  private _visible(): HTMLElement[] {
    return Array.from(this._list.querySelectorAll<HTMLElement>('[role="treeitem"]')).filter(
      li => !li.parentElement?.closest('[role="group"][hidden]')
    );
  }

  /** One Tab stop: the current row (the first when none is, or it went away). */
  private _roving(): void {
    const items = this._visible();
    const current = items.find(li => this._key(li) === this._current) ?? items[0];
    for (const li of this._list.querySelectorAll<HTMLElement>('[role="treeitem"]')) {
      li.tabIndex = li === current ? 0 : -1;
    }
    if (current) {
      this._current = this._key(current);
    }
  }

  private _setCurrent(li: HTMLElement): void {
    this._current = this._key(li);
    this._roving();
  }

  private _onKey(e: KeyboardEvent): void {
    const li = (e.target as HTMLElement).closest<HTMLElement>('[role="treeitem"]');
    if (!li || e.target !== li || e.altKey || e.ctrlKey || e.metaKey) {
      return;
    }
    const items = this._visible();
    const at = items.indexOf(li);
    const expanded = li.getAttribute('aria-expanded');
    let next: HTMLElement | undefined;
    switch (e.key) {
      case 'ArrowDown':
        next = items[at + 1];
        break;
      case 'ArrowUp':
        next = items[at - 1];
        break;
      case 'Home':
        next = items[0];
        break;
      case 'End':
        next = items[items.length - 1];
        break;
      case 'ArrowRight':
        if (expanded === 'false') {
          this._expand(li, true);
        } else if (expanded === 'true') {
          next = li.querySelector<HTMLElement>(':scope > [role="group"] > [role="treeitem"]') ?? undefined;
        }
        break;
      case 'ArrowLeft':
        if (expanded === 'true') {
          this._expand(li, false);
        } else {
          next = li.parentElement?.closest<HTMLElement>('[role="treeitem"]') ?? undefined;
        }
        break;
      case 'Enter':
        if (li.classList.contains('jp-nbagent-runs') || li.classList.contains('jp-nbagent-db')) {
          this._expand(li, expanded !== 'true');
        }
        return; // a session row's own handler opens it
      default:
        return;
    }
    e.preventDefault();
    if (next) {
      this._setCurrent(next);
      next.focus();
    }
  }

  private _row(s: ISessionRow, level: number): HTMLElement {
    const li = el('li', 'jp-nbagent-row', undefined, s.db ? { db: s.db, file: s.file, session: s.id } : { file: s.file, session: s.id });
    li.tabIndex = -1;
    li.setAttribute('role', 'treeitem');
    li.setAttribute('aria-level', String(level));
    li.setAttribute('aria-label', shown(`${s.label} · ${this._trans._n('%1 turn', '%1 turns', s.turns)}`));
    li.title = shown(this._trans.__(
      '%1\n%2 · session %3\nDouble-click or Enter to open the timeline · ↑↓ move · →← open or close its forks',
      s.label,
      s.file,
      s.id
    ));
    const label = el('div', 'jp-nbagent-row-label', s.label);
    const facts = [
      ...(s.parent ? [this._trans.__('fork')] : []),
      this._trans._n('%1 turn', '%1 turns', s.turns),
      this._trans._n('%1 event', '%1 events', s.events),
      s.model ?? this._trans.__('no model'),
      ago(s.last_time)
    ];
    const meta = el('div', 'jp-nbagent-row-meta', facts.join(' · '));
    const file = el('div', 'jp-nbagent-row-file', s.file.split('/').pop() ?? s.file);
    const actions = el('div', 'jp-nbagent-row-actions');
    const trans = this._trans;
    const open = button(
      'jp-nbagent-open',
      null,
      trans.__('Open'),
      trans.__('Open the timeline (read-only, follows the session live)'),
      () => this._open(s)
    );
    const exportButton = button(
      'jp-nbagent-export',
      downloadIcon,
      trans.__('Markdown'),
      trans.__('Export the transcript as Markdown'),
      () => void this._export(s)
    );
    // The row is the tree's stop; its buttons are for the pointer (Enter opens the tab, whose
    // toolbar exports), so they are not Tab stops of their own.
    open.tabIndex = -1;
    exportButton.tabIndex = -1;
    actions.append(open, exportButton);
    li.append(label, meta, file, actions);
    li.addEventListener('dblclick', e => {
      e.stopPropagation(); // a fork's row lies inside its parent's
      this._open(s);
    });
    li.addEventListener('keydown', e => {
      // Enter on the row itself opens; Enter on one of its buttons is that button's own click.
      if (e.key === 'Enter' && e.target === li) {
        this._open(s);
      }
    });
    return li;
  }

  private _unreadable(r: IUnreadable): HTMLElement {
    const li = el('li', 'jp-nbagent-row jp-nbagent-unreadable', undefined, { file: r.file });
    li.setAttribute('role', 'treeitem');
    li.setAttribute('aria-level', '1');
    li.tabIndex = -1;
    li.append(el('div', 'jp-nbagent-row-label', `⚠ ${r.file.split('/').pop()}`), el('div', 'jp-nbagent-row-meta', r.error));
    return li;
  }

  private async _export(s: ISession): Promise<void> {
    try {
      const { name, text } = await fetchTranscript(s, s.id, 'md');
      download(name, text);
    } catch (error) {
      this._message.textContent = this._trans.__('Could not export %1: %2', s.file, (error as Error).message);
    }
  }

  private _open: (session: ISession) => void;
  /** The row that is the tree's Tab stop, and which rows' groups the user opened or closed. */
  private _current = '';
  private _expanded = new Map<string, boolean>();
  private _trans: TranslationBundle;
  private _folder = '';
  /** The databases the server serves (`null` until asked), and the sessions of those opened. */
  private _databases: string[] | null = null;
  private _dbRows = new Map<string, Listing | Error>();
  private _signature = '';
  private _list: HTMLElement;
  private _message: HTMLElement;
  private _folderLine: HTMLElement;
  private _running: Promise<void> | null = null;
  private _again = false;
  private _poll = 0;
}
