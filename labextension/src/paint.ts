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
import { CanInsert, IProposal, proposalRow } from './proposal';

export const TIMELINE_MIME = 'application/vnd.nbagent.timeline+json';
export const SUPPORTED_VERSION = 1;
/** The last turns shown opened (older ones start collapsed), as in the static HTML. */
export const KEEP_OPEN = 3;
/** Pending items painted per queue before a "show more" button. */
export const PENDING_SHOWN = 200;

export interface INode {
  id: string;
  type: string;
  parent: string | null;
  seq: number;
  [field: string]: any;
}

export interface IBundle {
  version: number;
  seq: number;
  scope: { turn: number } | null;
  headline: string | null;
  status: string;
  status_text: string;
  summary: string;
  nodes: INode[];
  pending: { next_step: INode[]; next_turn: INode[] };
  omitted_turns?: number;
  /** `inbox` for an output that shows only the pending queues (an inbox widget's saved view). */
  view?: string;
}

/** An element with a class and, optionally, text (always as text) and data attributes. */
export function el(
  tag: string,
  cls = '',
  text?: string | null,
  data?: Record<string, string | number | null | undefined>
): HTMLElement {
  const e = document.createElement(tag);
  if (cls) {
    e.className = cls;
  }
  if (text !== undefined && text !== null) {
    e.textContent = String(text);
  }
  for (const [key, value] of Object.entries(data ?? {})) {
    if (value !== undefined && value !== null) {
      e.dataset[key] = String(value);
    }
  }
  return e;
}

const str = (value: unknown): string => (value === undefined || value === null ? '' : String(value));

function badge(kind: string, text: string, role = ''): HTMLElement {
  return el('span', 'nba-badge', text, { kind: kind || 'unknown', role: role || undefined });
}

function pill(status: string, text: string): HTMLElement {
  return el('span', 'nba-pill', text, { status });
}

function pre(text: string): HTMLElement {
  return el('pre', '', text);
}

/** A `<details>` item (or a plain row when there is no detail): the static HTML's `_details`. */
function item(
  cls: string,
  row: HTMLElement[],
  detail: HTMLElement[],
  data: Record<string, string | undefined>
): HTMLElement {
  const hasDetail = detail.length > 0;
  const box = el(hasDetail ? 'details' : 'div', `nba-item ${cls}`, undefined, data);
  const head = el(hasDetail ? 'summary' : 'div', 'nba-row');
  head.append(...row);
  box.append(head);
  if (hasDetail) {
    const body = el('div', 'nba-detail');
    body.append(...detail);
    box.append(body);
  }
  return box;
}

/** Badge, label, first line, `+N lines` and size: one row of a message or a pending item. */
export function messageRow(n: INode): HTMLElement[] {
  const row = [badge(str(n.kind), str(n.badge), str(n.role))];
  if (n.via) {
    row.push(el('span', 'nba-muted', `via ${n.via}`));
  }
  if (n.label) {
    row.push(el('span', 'nba-label', str(n.label)));
  }
  row.push(el('span', 'nba-line', str(n.first_line)));
  if (n.more_text) {
    row.push(el('span', 'nba-more', str(n.more_text)));
  }
  row.push(el('span', 'nba-size', str(n.size_text)));
  return row;
}

function section(title: string, text: string): HTMLElement[] {
  return [el('div', 'nba-source', title), pre(text)];
}

function answerRow(n: INode): HTMLElement[] {
  const row = [badge('assistant', 'assistant')];
  if (n.outcome) {
    row.push(el('span', 'nba-outcome', str(n.outcome)));
  }
  return row;
}

function answerClass(n: INode): string {
  return 'nba-answer' + (n.failed ? ' nba-failed' : '') + (n.streaming ? ' nba-streaming' : '');
}

/** An answer as text (as in the static HTML): no Markdown renderer, or still streaming. */
function plainAnswer(n: INode): HTMLElement {
  const row = answerRow(n);
  row.push(el('span', 'nba-answer-text', str(n.text) || str(n.first_line)));
  if (n.calls_text) {
    row.push(el('span', 'nba-muted', str(n.calls_text)));
  }
  const detail = n.reasoning ? section('reasoning', str(n.reasoning)) : [];
  return item(answerClass(n), row, detail, { id: n.id });
}

/**
 * An answer rendered as Markdown (sanitized, see `markdown.ts`), with its raw text one click away
 * (the "Raw" button; the choice is kept per answer across repaints). Reasoning stays collapsed.
 */
function answer(n: INode, ctx: IPaintContext): HTMLElement {
  const raw = ctx.raw.has(n.id);
  const box = el('div', `nba-item ${answerClass(n)} nba-answer-md`, undefined, { id: n.id });
  const row = el('div', 'nba-row');
  row.append(...answerRow(n));
  if (n.calls_text) {
    row.append(el('span', 'nba-muted', str(n.calls_text)));
  }
  const toggle = el('button', 'jp-Button jp-mod-minimal jp-mod-small nba-raw-toggle') as HTMLButtonElement;
  toggle.type = 'button';
  const rendered = el('div', 'nba-answer-text nba-md jp-RenderedHTMLCommon');
  const source = pre(str(n.text));
  source.classList.add('nba-answer-raw');
  const show = (asRaw: boolean): void => {
    rendered.hidden = asRaw;
    source.hidden = !asRaw;
    toggle.textContent = asRaw ? 'Markdown' : 'Raw';
    toggle.title = asRaw ? 'Show the answer rendered as Markdown' : 'Show the answer as the model wrote it';
    toggle.setAttribute('aria-pressed', String(asRaw));
    box.dataset.show = asRaw ? 'raw' : 'markdown';
  };
  toggle.addEventListener('click', () => {
    const asRaw = !ctx.raw.has(n.id);
    if (asRaw) {
      ctx.raw.add(n.id);
    } else {
      ctx.raw.delete(n.id);
    }
    show(asRaw);
  });
  show(raw);
  row.append(el('span', 'nba-grow'), toggle);
  box.append(row, rendered, source);
  ctx.markdown!(str(n.text), rendered)
    .then(() => {
      box.dataset.rendered = 'true';
    })
    .catch(() => {
      rendered.replaceChildren(pre(str(n.text))); // the parser failed: the text as written
      box.dataset.rendered = 'failed';
    });
  if (n.reasoning) {
    const reasoning = el('details', 'nba-reasoning');
    reasoning.append(el('summary', 'nba-source', 'reasoning'), pre(str(n.reasoning)));
    box.append(reasoning);
  }
  return box;
}

/** What painting a leaf may use besides the node. */
interface IPaintContext {
  /** Renders an answer's Markdown, or `null` to keep answers as text. */
  markdown: MarkdownFill | null;
  /** The answers whose raw text is shown instead of their rendering. */
  raw: Set<string>;
  /** Whether proposed cells can be inserted here; `null`: read-only (Copy only). */
  canInsert: CanInsert | null;
}

/** The element of one node that is not a turn or a step, or `null` for an unknown type. */
function leaf(n: INode, ctx: IPaintContext): HTMLElement | null {
  switch (n.type) {
    case 'message':
      return item('nba-msg', messageRow(n), [pre(str(n.text))], {
        id: n.id,
        kind: str(n.kind),
        role: str(n.role)
      });
    case 'assistant':
      return ctx.markdown && n.text && !n.streaming ? answer(n, ctx) : plainAnswer(n);
    case 'tool': {
      const running = n.result === null || n.result === undefined;
      const row = [
        badge('tool', 'tool'),
        el('b', '', str(n.name)),
        el('span', 'nba-tool-args', str(n.arguments_text)),
        el('span', 'nba-outcome', n.is_error || running ? str(n.outcome) : '→'),
        el('span', 'nba-line', str(n.result_line))
      ];
      const detail = section('arguments', str(n.arguments));
      if (!running) {
        detail.push(...section(n.is_error ? 'error' : 'result', str(n.result)));
      }
      const cls = 'nba-tool' + (n.is_error ? ' nba-tool-error' : '');
      return item(cls, row, detail, { id: n.id, outcome: str(n.outcome) });
    }
    case 'retry': {
      const why = n.why ? ` — ${n.why}` : '';
      return el('div', 'nba-mark', `${str(n.text)}${why}`, { mark: 'retry', id: n.id });
    }
    case 'approval':
      return el('div', 'nba-mark', str(n.text), {
        mark: 'approval',
        outcome: str(n.outcome) || 'asked',
        id: n.id
      });
    case 'mark':
      return el('div', 'nba-mark', str(n.text), { mark: str(n.mark), id: n.id });
    case 'proposal':
      return proposalRow(n as unknown as IProposal, ctx.canInsert);
    default:
      return null; // a node type this version does not know is skipped
  }
}

function turnHead(n: INode): HTMLElement[] {
  const head = [el('span', 'nba-caret'), el('b', '', `Turn ${n.turn}`), el('span', 'nba-line', str(n.title))];
  if (n.why !== null && n.why !== undefined) {
    head.push(el('span', 'nba-outcome', str(n.outcome)));
  }
  head.push(el('span', 'nba-muted', str(n.steps_text)));
  if (n.duration_text) {
    head.push(el('span', 'nba-muted', str(n.duration_text)));
  }
  head.push(pill(str(n.status), str(n.status_text)));
  return head;
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
    this._ctx = { markdown: options.markdown ?? null, raw: new Set(), canInsert: options.canInsert ?? null };
    this.node = el('div', 'nbagent nba-timeline');
    this._head = el('div', 'nba-head');
    this._notice = el('div', 'nba-note');
    this._scroll = el('div', 'nba-scroll');
    this._pending = el('div', 'nba-pending');
    this.node.append(this._head, this._notice, this._scroll, this._pending);
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
    this._paintPending(bundle);
    this.node.dataset.nodes = String(this._entries.size);
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

  private _paintHead(bundle: IBundle): void {
    const parts: HTMLElement[] = [];
    if (bundle.scope !== null) {
      parts.push(el('span', 'nba-line', str(bundle.headline)));
    } else {
      parts.push(el('span', 'nba-title', bundle.view === 'inbox' ? 'Inbox' : 'Timeline'));
      const note = this.note ? ` · ${this.note}` : '';
      parts.push(el('span', 'nba-muted', `${str(bundle.summary)}${note}`));
    }
    parts.push(el('span', 'nba-grow'), pill(str(bundle.status), str(bundle.status_text)));
    this._head.replaceChildren(...parts);
  }

  private _paintPending(bundle: IBundle, always = false): void {
    const queues: [string, INode[]][] = [
      ['next-step', bundle.pending?.next_step ?? []],
      ['next-turn', bundle.pending?.next_turn ?? []]
    ];
    const parts: HTMLElement[] = [];
    for (const [name, items] of queues) {
      if (!items.length && !always) {
        continue;
      }
      const queue = el('div', items.length ? 'nba-queue' : 'nba-queue nba-queue-empty', undefined, { queue: name });
      queue.append(el('div', 'nba-queue-name', name));
      if (!items.length) {
        queue.append(el('span', 'nba-muted', 'empty'));
      }
      // A long queue shows its first items and a button for more: thousands of pending items
      // would otherwise all be in the DOM.
      const shown = this._pendingShown.get(name) ?? PENDING_SHOWN;
      for (const m of items.slice(0, shown)) {
        queue.append(item('nba-inbox-item', messageRow(m), [pre(str(m.text))], { id: m.id, kind: str(m.kind) }));
      }
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
      const box = el('details', 'nba-turn', undefined, { id: n.id, status: str(n.status) });
      const head = el('summary', 'nba-turn-head');
      head.append(...turnHead(n));
      const body = el('div', 'nba-turn-body');
      this._setWhy(body, n);
      box.append(head, body);
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
      const box = el('div', 'nba-step', undefined, { id: n.id });
      box.append(el('div', 'nba-step-head', str(n.label)));
      entry.element = box;
      entry.children = box;
      if (n.parent === null) {
        this._built.add(entry.root);
      }
    } else {
      entry.element = leaf(n, this._ctx);
      if (n.parent === null) {
        this._built.add(entry.root);
      }
    }
  }

  /** The turn body's first child says why a turn did not complete (absent when it did). */
  private _setWhy(body: HTMLElement, n: INode): void {
    const old = body.firstElementChild;
    if (old?.classList.contains('nba-why')) {
      old.remove();
    }
    if (n.why) {
      const why = el('div', 'nba-why');
      why.append(el('b', '', 'Why:'), document.createTextNode(` ${n.why}`));
      body.prepend(why);
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
      old.dataset.status = str(n.status);
      old.querySelector(':scope > summary')!.replaceChildren(...turnHead(n));
      this._setWhy(entry.children!, n);
      return;
    }
    if (n.type === 'step') {
      old.querySelector(':scope > .nba-step-head')!.textContent = str(n.label);
      return;
    }
    const fresh = leaf(n, this._ctx);
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
