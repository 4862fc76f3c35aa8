/**
 * Types of nbagent's shared painter (painter.js beside this file), for the JupyterLab extension,
 * which imports the same module the anywidget widgets run (labextension/src/paint.ts). The nodes it
 * paints are the view model's, typed in view_model.d.ts (generated from nbagent/views/schema.py).
 */

import type {
  IAssistantNode,
  IDiffModel,
  IDiffStep,
  IInboxItem,
  IMessageNode,
  IStepNode,
  IToolNode,
  ITurnNode,
  ViewNode
} from './view_model';

export * from './view_model';

/**
 * The node of type `T` (`NodeOfType<'proposal'>` is `IProposalNode`). A bundle from a newer nbagent
 * may hold node types this version has no type for: the painter shows those by their `text` (`leaf`).
 */
export type NodeOfType<T extends ViewNode['type']> = Extract<ViewNode, { type: T }>;

/** Painters of node types a host paints itself, by node type. */
export type Leaves = { [T in ViewNode['type']]?: (node: NodeOfType<T>) => HTMLElement };

/** What painting an item may use besides the node. */
export interface IPainterContext {
  /** Ids of the items the user opened (kept across repaints). */
  opened?: Set<string>;
  /** Ids of the answers shown as raw text instead of their rendering. */
  raw: Set<string>;
  /** Renders an answer's Markdown into `host`, or `null` to keep answers as text. */
  markdown: ((source: string, host: HTMLElement, node: IAssistantNode) => Promise<void> | void) | null;
  /** Whether `markdown` can render this answer (absent: every whole answer). */
  renders?: (node: IAssistantNode) => boolean;
  /** Painters of node types the host paints itself (e.g. `proposal`). */
  leaves?: Leaves;
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
export function messageRow(n: IMessageNode | IInboxItem): HTMLElement[];
export function messageItem(n: IMessageNode, ctx?: IPainterContext | null): HTMLElement;
export function pendingItem(m: IInboxItem, ctx?: { opened?: Set<string> } | null, extra?: Node[]): HTMLElement;
export function plainAnswer(n: IAssistantNode, ctx?: IPainterContext | null): HTMLElement;
export function markdownAnswer(n: IAssistantNode, ctx: IPainterContext): HTMLElement;
export function answerItem(n: IAssistantNode, ctx?: IPainterContext | null): HTMLElement;
export function toolItem(n: IToolNode, ctx?: IPainterContext | null): HTMLElement;
export function mark(kind: string, text: string, data?: Data): HTMLElement;
/** The element of a node that is not a turn or a step; `null` for a type it cannot show. */
export function leaf(n: ViewNode, ctx?: IPainterContext | null): HTMLElement | null;
export function turnHead(n: ITurnNode): HTMLElement[];
export function setWhy(body: HTMLElement, n: ITurnNode): void;
export const KIND_ORDER: string[];
export function kindColour(kind: string): string;
export function legendKinds(nodes: Iterable<ViewNode>): string[];
export function meterLegend(nodes: Iterable<ViewNode>): HTMLElement | null;
export function stepMeter(n: IStepNode): HTMLElement | null;
export function paintStepHead(head: HTMLElement, n: IStepNode): void;
export function stepBox(n: IStepNode): HTMLElement;
export function turnBox(n: ITurnNode): { box: HTMLDetailsElement; body: HTMLElement };
export function repaintTurn(box: HTMLElement, body: HTMLElement | null | undefined, n: ITurnNode): void;
export function paneHead(title: string, muted: string, status: string, statusText: string): HTMLElement;
export function queueBox<T>(name: string, hint: string | null, items: T[], paintItem: (m: T) => HTMLElement): HTMLElement;

/** One step of a turn diff (`diff_json` of nbagent/views/diff.py). */
export function diffStep(step: IDiffStep, later?: ((box: HTMLElement, fill: () => void) => void) | null): HTMLElement;
/** A changed answer word by word (`[[op, text]]`, op `=`, `+` or `-`). */
export function answerWords(ops: string[][]): HTMLElement;
/** A turn diff's view model (`application/vnd.nbagent.diff+json`) painted. */
export function diffView(model: IDiffModel, options?: { eager?: boolean }): HTMLElement;
