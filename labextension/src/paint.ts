/**
 * The painter of the timeline bundle (`application/vnd.nbagent.timeline+json`, version 1; see
 * docs/timeline-json.md). It paints the view model's ready-made strings and never computes words,
 * units or reasons. Every string from the bundle goes into the DOM as text (`textContent`,
 * attributes), never as HTML: message content is data.
 *
 * The DOM mirrors the static HTML of `nbagent.views.html` (same classes, same stylesheet), so a
 * saved output, the session tab and the text/html fallback look alike. Updates are keyed by node
 * id: a new bundle repaints only the nodes whose fields changed, and a turn's body is built when it
 * is first opened, so a long session paints its first screen quickly.
 */

import type { MarkdownFill } from './markdown';
import { CanInsert, proposalRow } from './proposal';
import {
  el as paintEl,
  leaf as paintLeaf,
  markPainted,
  meterLegend,
  paneHead,
  paintStepHead,
  pendingItem,
  pill,
  pre,
  queueBox,
  repaintTurn,
  shown,
  stepBox,
  turnBox
} from './widgets/painter.js';
import type { IForkedNode, IInboxItem, ITimelineBundle, Leaves, ViewNode } from './widgets/painter.js';

/** Data as a view shows it (bidirectional controls as visible marks): the painter's one function. */
export { shown };

export const TIMELINE_MIME = 'application/vnd.nbagent.timeline+json';
export const SUPPORTED_VERSION = 1;
/** The last turns shown opened (older ones start collapsed), as in the static HTML. */
export const KEEP_OPEN = 3;
/** Pending items painted per queue before a "show more" button. */
export const PENDING_SHOWN = 200;

/**
 * A node of the bundle: one of the view model's node types, discriminated on `type` (generated from
 * nbagent/views/schema.py into src/widgets/view_model.d.ts).
 */
export type INode = ViewNode;
export type { IForkedNode };

/** The bundle (`view: 'inbox'` for an output that shows only the pending queues). */
export type IBundle = ITimelineBundle;

/**
 * An element with a class and, optionally, text (always as text) and data attributes: the shared
 * painter's (`src/widgets/painter.js`, which the anywidget widgets' modules bundle too).
 */
export function el(
  tag: string,
  cls = '',
  text?: string | null,
  data?: Record<string, string | number | null | undefined>
): HTMLElement {
  return paintEl(tag, cls, text, data);
}

const str = (value: unknown): string => (value === undefined || value === null ? '' : String(value));

/** What painting a leaf may use besides the node (the shared painter's context). */
interface IPaintContext {
  /** Items the user opened, kept across repaints. */
  opened: Set<string>;
  /** Renders an answer's Markdown, or `null` to keep answers as text. */
  markdown: MarkdownFill | null;
  /** The answers whose raw text is shown instead of their rendering. */
  raw: Set<string>;
  /** Painters of node types the shared painter leaves to its host (`proposal`: `proposal.ts`). */
  leaves: Leaves;
}

interface IEntry {
  node: INode;
  sig: string;
  /** The node's element (absent for an unknown type, or while its turn is unbuilt). */
  element: HTMLElement | null;
  /** Where its children go (a turn's body, a step). */
  children: HTMLElement | null;
  /** The top-level node it belongs to. */
  root: string;
}

export interface ITimelineViewOptions {
  /** Words after the summary in the head, e.g. `saved view` or `following`. */
  note?: string;
  /** Renders assistant answers as Markdown (see `markdown.ts`); without it they stay text. */
  markdown?: MarkdownFill | null;
  /** Whether proposed cells can be inserted where this view is (see `proposal.ts`). */
  canInsert?: CanInsert | null;
}

/** A timeline painted from bundles; `render` again with a newer bundle to update in place. */
export class TimelineView {
  readonly node: HTMLElement;
  note: string;

  constructor(options: ITimelineViewOptions = {}) {
    this.note = options.note ?? '';
    const canInsert = options.canInsert ?? null;
    this._ctx = {
      opened: new Set(),
      markdown: options.markdown ?? null,
      raw: new Set(),
      leaves: { proposal: n => proposalRow(n, canInsert) }
    };
    this.node = el('div', 'nbagent nba-timeline');
    this._head = el('div', 'nba-head');
    this._notice = el('div', 'nba-note');
    this._legend = el('div', 'nba-legend-box');
    this._scroll = el('div', 'nba-scroll');
    this._pending = el('div', 'nba-pending');
    this.node.append(this._head, this._notice, this._legend, this._scroll, this._pending);
  }

  /** The bundle painted last. */
  get bundle(): IBundle | null {
    return this._bundle;
  }

  render(bundle: IBundle): void {
    const previous = this._bundle;
    const restart =
      previous === null ||
      bundle.seq < previous.seq ||
      bundle.nodes.length < this._entries.size ||
      JSON.stringify(bundle.scope) !== JSON.stringify(previous.scope);
    if (restart) {
      this._reset(bundle);
    }
    this._bundle = bundle;
    // The root's class says what it shows, as in the static HTML: a whole-session timeline, one
    // turn (a live cell's view), or the inbox.
    const inbox = bundle.view === 'inbox';
    const live = !inbox && bundle.scope !== null;
    this.node.classList.toggle('nba-inbox', inbox);
    this.node.classList.toggle('nba-live', live);
    this.node.classList.toggle('nba-timeline', !inbox && !live);
    this.node.dataset.seq = String(bundle.seq);
    this.node.dataset.status = bundle.status;
    this._paintHead(bundle);
    if (inbox) {
      this._paintPending(bundle, true);
      markPainted(this.node);
      return;
    }
    const turns = bundle.nodes.filter(n => n.type === 'turn' && n.parent === null);
    const open = new Set(turns.slice(-KEEP_OPEN).map(n => n.id));
    for (const n of bundle.nodes) {
      this._upsert(n, bundle.scope !== null || open.has(n.id));
    }
    if (!turns.length && !bundle.nodes.length && bundle.scope === null) {
      this._scroll.replaceChildren(el('div', 'nba-empty', 'No turns yet.'));
      this._empty = true;
    }
    this._paintLegend(bundle);
    this._paintPending(bundle);
    this.node.dataset.nodes = String(this._entries.size);
    markPainted(this.node);
  }

  private _reset(bundle: IBundle): void {
    this._entries.clear();
    this._built.clear();
    this._order = [];
    this._scroll.replaceChildren();
    this._empty = false;
    const omitted = bundle.omitted_turns ?? 0;
    this._notice.textContent = omitted
      ? `${omitted} earlier turn${omitted === 1 ? '' : 's'} show only their heads here: open the session in the Agent sessions panel for all of it`
      : '';
    this._notice.hidden = !omitted;
  }

  /** The bars' colour key, once per timeline, repainted when the kinds the bars hold change. */
  private _paintLegend(bundle: IBundle): void {
    const legend = meterLegend(bundle.nodes);
    const kinds = legend ? Array.from(legend.querySelectorAll<HTMLElement>('[data-part]'), e => e.dataset.part).join(' ') : '';
    if (this._legend.dataset.kinds !== kinds) {
      this._legend.dataset.kinds = kinds;
      this._legend.replaceChildren(...(legend ? [legend] : []));
    }
  }

  private _paintHead(bundle: IBundle): void {
    if (bundle.scope === null) {
      const title = bundle.view === 'inbox' ? 'Inbox' : 'Timeline';
      const note = this.note ? ` · ${this.note}` : '';
      const head = paneHead(title, `${str(bundle.summary)}${note}`, str(bundle.status), str(bundle.status_text));
      this._head.replaceChildren(...Array.from(head.childNodes));
      return;
    }
    const parts = [el('span', 'nba-line', str(bundle.headline))];
    parts.push(el('span', 'nba-grow'), pill(str(bundle.status), str(bundle.status_text)));
    this._head.replaceChildren(...parts);
  }

  private _paintPending(bundle: IBundle, always = false): void {
    const queues: [string, IInboxItem[]][] = [
      ['next-step', bundle.pending?.next_step ?? []],
      ['next-turn', bundle.pending?.next_turn ?? []]
    ];
    const parts: HTMLElement[] = [];
    for (const [name, items] of queues) {
      if (!items.length && !always) {
        continue;
      }
      // A long queue shows its first items and a button for more: thousands of pending items
      // would otherwise all be in the DOM.
      const shown = this._pendingShown.get(name) ?? PENDING_SHOWN;
      const queue = queueBox(name, null, items.slice(0, shown), m => pendingItem(m, this._ctx));
      if (items.length > shown) {
        const more = el('button', 'jp-Button jp-mod-minimal jp-mod-small nba-more-pending') as HTMLButtonElement;
        more.type = 'button';
        more.textContent = `${items.length - shown} more in ${name}: show ${Math.min(PENDING_SHOWN, items.length - shown)} more`;
        more.addEventListener('click', () => {
          this._pendingShown.set(name, shown + PENDING_SHOWN);
          this._paintPending(bundle, always);
          this._pending.querySelector<HTMLElement>(`[data-queue="${name}"] .nba-more-pending`)?.focus();
        });
        queue.append(more);
      }
      parts.push(queue);
    }
    if (parts.length && !always) {
      parts.unshift(el('div', 'nba-source', 'Pending (the model has not seen these yet)'));
    }
    this._pending.replaceChildren(...parts);
    this._pending.hidden = !parts.length;
  }

  private _upsert(n: INode, opened: boolean): void {
    if (this._empty) {
      this._scroll.replaceChildren();
      this._empty = false;
    }
    const sig = JSON.stringify(n);
    const known = this._entries.get(n.id);
    if (known) {
      if (known.sig === sig) {
        return;
      }
      known.node = n;
      known.sig = sig;
      if (known.element) {
        this._repaint(known);
      }
      return;
    }
    const parent = n.parent === null ? null : this._entries.get(n.parent) ?? null;
    const entry: IEntry = {
      node: n,
      sig,
      element: null,
      children: null,
      root: parent ? parent.root : n.id
    };
    this._entries.set(n.id, entry);
    this._order.push(n.id);
    if (parent === null) {
      this._create(entry, opened);
      if (entry.element) {
        this._scroll.append(entry.element);
      }
    } else if (this._built.has(entry.root) && parent.children) {
      this._create(entry, false);
      if (entry.element) {
        parent.children.append(entry.element);
      }
    }
  }

  /** Build the element of `entry` (a turn opened now gets its body at once). */
  private _create(entry: IEntry, opened: boolean): void {
    const n = entry.node;
    if (n.type === 'turn') {
      const { box, body } = turnBox(n);
      entry.element = box;
      entry.children = body;
      if (n.omitted) {
        return;
      }
      box.addEventListener('toggle', () => {
        if ((box as HTMLDetailsElement).open) {
          this._build(entry);
        }
      });
      if (opened) {
        (box as HTMLDetailsElement).open = true;
        this._build(entry);
      }
    } else if (n.type === 'step') {
      const box = stepBox(n);
      entry.element = box;
      entry.children = box;
      if (n.parent === null) {
        this._built.add(entry.root);
      }
    } else {
      entry.element = paintLeaf(n, this._ctx);
      if (n.parent === null) {
        this._built.add(entry.root);
      }
    }
  }

  /** Build the descendants of a turn, in log order, the first time it is opened. */
  private _build(turn: IEntry): void {
    if (this._built.has(turn.node.id)) {
      return;
    }
    this._built.add(turn.node.id);
    for (const id of this._order) {
      const entry = this._entries.get(id)!;
      if (entry.root !== turn.node.id || entry === turn) {
        continue;
      }
      const parent = this._entries.get(entry.node.parent ?? '');
      this._create(entry, false);
      if (entry.element && parent?.children) {
        parent.children.append(entry.element);
      }
    }
  }

  /** Repaint a changed node in place, keeping its children and whether it was opened. */
  private _repaint(entry: IEntry): void {
    const n = entry.node;
    const old = entry.element!;
    if (n.type === 'turn') {
      repaintTurn(old, entry.children, n);
      return;
    }
    if (n.type === 'step') {
      paintStepHead(old.querySelector<HTMLElement>(':scope > .nba-step-head')!, n);
      return;
    }
    const fresh = paintLeaf(n, this._ctx);
    if (fresh) {
      if (old instanceof HTMLDetailsElement && fresh instanceof HTMLDetailsElement) {
        fresh.open = old.open;
      }
      old.replaceWith(fresh);
      entry.element = fresh;
    }
  }

  private _ctx: IPaintContext;
  private _pendingShown = new Map<string, number>();
  private _bundle: IBundle | null = null;
  private _entries = new Map<string, IEntry>();
  private _order: string[] = [];
  private _built = new Set<string>();
  private _empty = false;
  private _head: HTMLElement;
  private _notice: HTMLElement;
  private _legend: HTMLElement;
  private _scroll: HTMLElement;
  private _pending: HTMLElement;
}

/** What a bundle this painter cannot read shows instead (with the output's plain text, if any). */
export function unsupported(bundle: unknown, plain: string): HTMLElement {
  const box = el('div', 'nbagent nba-timeline');
  const version = (bundle as IBundle | undefined)?.version;
  box.append(
    el(
      'div',
      'nba-note',
      `This timeline was saved by a newer nbagent (format version ${str(version)}); this JupyterLab extension reads version ${SUPPORTED_VERSION}. Upgrade nbagent (pip install -U nbagent) to see it here.`
    )
  );
  if (plain) {
    box.append(pre(plain));
  }
  return box;
}
