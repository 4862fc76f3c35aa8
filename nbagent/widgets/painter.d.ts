/**
 * Types of nbagent's shared painter (painter.js beside this file), for the JupyterLab extension,
 * which imports the same module the anywidget widgets run (labextension/src/paint.ts).
 */

/** A node of the view model (docs/timeline-json.md): its words arrive ready-made. */
export interface IPainterNode {
  id: string;
  type: string;
  parent?: string | null;
  [field: string]: any;
}

/** What painting an item may use besides the node. */
export interface IPainterContext {
  /** Ids of the items the user opened (kept across repaints). */
  opened?: Set<string>;
  /** Ids of the answers shown as raw text instead of their rendering. */
  raw: Set<string>;
  /** Renders an answer's Markdown into `host`, or `null` to keep answers as text. */
  markdown: ((source: string, host: HTMLElement, node: IPainterNode) => Promise<void> | void) | null;
  /** Whether `markdown` can render this answer (absent: every whole answer). */
  renders?: (node: IPainterNode) => boolean;
  /** Painters of node types the host paints itself (e.g. `proposal`), by node type. */
  leaves?: Record<string, (node: IPainterNode) => HTMLElement>;
}

export type Data = Record<string, string | number | null | undefined>;

export const PAINTED: string;
/** `value` as the text a view shows: each bidirectional control a visible mark. */
export function shown(value: unknown): string;
export function el(tag: string, cls?: string | null, text?: string | null, data?: Data): HTMLElement;
export function badge(kind: string, text: string, role?: string): HTMLElement;
export function pill(status: string, text: string): HTMLElement;
export function pre(text: unknown): HTMLElement;
export function markPainted(root: HTMLElement): void;
/** A Markdown tree (nbagent/views/markdown_tree.py) as DOM nodes; no HTML is parsed. */
export function markdownNodes(tree: unknown): Node[];
export function item(
  cls: string,
  row: Node[],
  detail: (() => Node[]) | null,
  data: Data,
  ctx?: { opened?: Set<string> } | null
): HTMLElement;
export function messageRow(n: IPainterNode): HTMLElement[];
export function messageItem(n: IPainterNode, ctx?: IPainterContext | null): HTMLElement;
export function pendingItem(m: IPainterNode, ctx?: { opened?: Set<string> } | null, extra?: Node[]): HTMLElement;
export function plainAnswer(n: IPainterNode, ctx?: IPainterContext | null): HTMLElement;
export function markdownAnswer(n: IPainterNode, ctx: IPainterContext): HTMLElement;
export function answerItem(n: IPainterNode, ctx?: IPainterContext | null): HTMLElement;
export function toolItem(n: IPainterNode, ctx?: IPainterContext | null): HTMLElement;
export function mark(kind: string, text: string, data?: Data): HTMLElement;
export function leaf(n: IPainterNode, ctx?: IPainterContext | null): HTMLElement | null;
export function turnHead(n: IPainterNode): HTMLElement[];
export function setWhy(body: HTMLElement, n: IPainterNode): void;
export const KIND_ORDER: string[];
export function kindColour(kind: string): string;
export function legendKinds(nodes: Iterable<IPainterNode>): string[];
export function meterLegend(nodes: Iterable<IPainterNode>): HTMLElement | null;
export function stepMeter(n: IPainterNode): HTMLElement | null;
export function paintStepHead(head: HTMLElement, n: IPainterNode): void;
export function stepBox(n: IPainterNode): HTMLElement;
export function turnBox(n: IPainterNode): { box: HTMLDetailsElement; body: HTMLElement };
export function repaintTurn(box: HTMLElement, body: HTMLElement | null | undefined, n: IPainterNode): void;
export function paneHead(title: string, muted: string, status: string, statusText: string): HTMLElement;
export function queueBox(
  name: string,
  hint: string | null,
  items: IPainterNode[],
  paintItem: (m: IPainterNode) => HTMLElement
): HTMLElement;

/** One step of a turn diff (`diff_json` of nbagent/views/diff.py). */
export function diffStep(step: any, later?: ((box: HTMLElement, fill: () => void) => void) | null): HTMLElement;
/** A turn diff's view model (`application/vnd.nbagent.diff+json`) painted. */
/** A changed answer word by word (`[[op, text]]`). */
export function answerWords(ops: [string, string][]): HTMLElement;
export function diffView(model: any, options?: { eager?: boolean }): HTMLElement;
