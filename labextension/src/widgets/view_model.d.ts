// Generated from nbagent/views/schema.py by `python3 scripts/gen_view_types.py`: do not edit by hand.
// The types of the view models' JSON (docs/timeline-json.md), for the shared painter (painter.d.ts
// beside this file) and the JupyterLab extension. tests/test_view_types.py fails when it is stale.

/** A request's estimate (`request/estimate`): its tokens in total and by source kind. */
export interface ITokenEstimate {
  total: number;
  /** Tokens by source kind (`dataframe`, `user`, `system`, `tools`…). */
  by_source: Record<string, number>;
  /** `chars` (the estimate) or `tiktoken` (the model's tokenizer). */
  counter: string;
  /** The model's context window, when known. */
  window: number | null;
}

/** One part of a step's stacked bar (colour it by `kind`, as the message badges are). */
export interface IBarPart {
  kind: string;
  tokens: number;
  /** Its share of the request's total, 0–1. */
  share: number;
  /** `dataframe: 1,200 tokens`. */
  text: string;
}

/** What a step (or a blocked turn) shows of its request's estimate. */
export interface IEstimateFields {
  tokens: ITokenEstimate;
  /** `≈2,340 tokens in · 2% of the 128,000-token window`. */
  tokens_text: string;
  /** The stacked bar, in kind order. */
  bar: IBarPart[];
}

/** One of the largest messages a context warning names. */
export interface IWarningItem {
  source: string;
  label: string;
  tokens: number;
}

/** A request estimated above 90 % of the context window, as `request/estimate` stored it. */
export interface IContextWarning {
  threshold: number;
  estimate: number;
  window: number;
  largest: IWarningItem[];
}

/** Token usage as the provider reported it (`input_tokens` includes the cached ones). */
export interface IProviderUsage {
  input_tokens?: number;
  output_tokens?: number;
  cached_input_tokens?: number;
}

/** The cell of the prompt that started a turn: where a proposed cell is inserted. */
export interface IProposalCell {
  execution_count?: number | null;
  cell_id?: string | null;
}

/** How a message is named wherever it is shown (`nbagent.views.labels.Label.fields`). */
export interface IMessageFields {
  /** The source kind (`user`, `cell`, `dataframe`…; tolerate unknown kinds): the badge colour key. */
  kind: string;
  /** `followup`, `steer`, `prompt`, `context` or `tool-context`. */
  role: string;
  /** The badge's words: `followup`, `steer`, `dataframe`, `recall`… */
  badge: string;
  /** A short name (`df · 50×3 · pandas`); may be `""`. */
  label: string;
  /** The first line that says something, cut at a word. */
  first_line: string;
  /** Lines of the text beyond the first. */
  more_lines: number;
  /** `+12 lines`, or `""`. */
  more_text: string;
  /** Bytes of the text (UTF-8). */
  size: number;
  /** `812 B`, `4.1 kB`. */
  size_text: string;
  /** The content as the model received it. */
  text: string;
}

/** What every node has (docs/timeline-json.md, *Nodes*). */
export interface INodeBase {
  /** Stable identity: `turn-3`, `step-3-1`, `msg-17`, `answer-3-1`, `tool-3-1-c1`… */
  id: string;
  /** The id of the enclosing turn or step; `null` at the top. */
  parent: string | null;
  /** The seq of the event that created it. */
  seq: number;
  /** `true` when a long text field of this node was shortened (`max_text`). */
  cut?: boolean;
}

/** A turn: its head (number, prompt, outcome, steps, time, status) and, inside, its children. */
export interface ITurnNode extends INodeBase {
  type: 'turn';
  turn: number;
  /** `running`, `completed`, `max-tokens`, `blocked`, `aborted`, `error`, `interrupted`. */
  status: string;
  /** The status pill's words. */
  status_text: string;
  /** The first line of the turn's first typed prompt (`""` if none). */
  title: string;
  /** One line for the turn head (`""` while running). */
  outcome: string;
  /** The full failure text when the turn did not complete; `null` otherwise. */
  why: string | null;
  steps: number;
  steps_text: string;
  /** Unix ms of `turn/start`. */
  start: number;
  /** Unix ms of `turn/end`; `null` while running. */
  end: number | null;
  duration_text: string;
  /** The sum of its steps' estimates. */
  sent_tokens?: number;
  sent_tokens_text?: string;
  /** A turn blocked by `context_limit = "block"`: the rejected request's estimate. */
  tokens?: ITokenEstimate;
  tokens_text?: string;
  bar?: IBarPart[];
  /** A replayed turn's edit in words (absent on a turn that is no replay). */
  replay_text?: string;
  /** `true` when the turn's children were left out (`max_turns`). */
  omitted?: boolean;
}

/** A step of a turn (one model request); its estimate arrives with `request/estimate`. */
export interface IStepNode extends INodeBase {
  type: 'step';
  turn: number;
  step: number;
  /** `step 2`. */
  label: string;
  tokens?: ITokenEstimate;
  tokens_text?: string;
  bar?: IBarPart[];
}

/** A user-role message the model received. */
export interface IMessageNode extends INodeBase, IMessageFields {
  type: 'message';
  message_id: string;
  /** The tool whose result added this context, e.g. `lookup`. */
  via: string | null;
  /** The stored source, as JSON. */
  source: Record<string, unknown>;
}

/** One model answer, streamed then settled. */
export interface IAssistantNode extends INodeBase {
  type: 'assistant';
  /** The answer text (grows while streaming). */
  text: string;
  reasoning: string;
  first_line: string;
  streaming: boolean;
  /** Cut off by a cancel (the visible prefix was kept). */
  interrupted: boolean;
  /** This attempt failed and was retried (a later answer node replaces it). */
  failed: boolean;
  calls: number;
  calls_text: string;
  /** `""`, `interrupted`, or `failed attempt`. */
  outcome: string;
  model: string | null;
  usage: IProviderUsage | null;
  /** The answer's message id, once it is settled. */
  message_id?: string;
  /**
   * The whole answer's Markdown as a tree (`nbagent/views/markdown_tree.py`): only in the timeline
   * widget's snapshot and patches, never in a saved bundle.
   */
  md?: unknown[];
}

/** One tool call and its result. */
export interface IToolNode extends INodeBase {
  type: 'tool';
  name: string;
  call_id: string;
  /** The raw JSON arguments the model produced. */
  arguments: string;
  arguments_text: string;
  /** The result text; `null` while the tool runs. */
  result: string | null;
  result_line: string;
  is_error: boolean;
  error_code: string | null;
  /** `running`, `done`, or `failed: <code>`. */
  outcome: string;
}

/** A tool waiting for, then given, a decision. */
export interface IApprovalNode extends INodeBase {
  type: 'approval';
  tool: string;
  call_id: string;
  /**
   * `null` while asked; then `allowed-once`, `allowed-session`, `rejected`, `cancelled`,
   * `unavailable`.
   */
  outcome: string | null;
  text: string;
}

/** A cell the model proposed with `propose_cell` (SPEC §9.7). */
export interface IProposalNode extends INodeBase {
  type: 'proposal';
  /** The proposal's id `TURN.K`. */
  proposal: string;
  call_id: string;
  /** The proposed cell's source, never cut. */
  code: string;
  note: string;
  cell: IProposalCell | null;
  text: string;
  /** What the user did with it, once the log says so. */
  done?: 'inserted' | 'inserted-and-ran';
  /** The `In [n]` the cell went below, when the front end said. */
  done_below?: number | null;
}

/** A request estimated above 90 % of the context window. */
export interface IWarningNode extends INodeBase {
  type: 'warning';
  warning: IContextWarning;
  text: string;
}

/** A failed model request about to be retried. */
export interface IRetryNode extends INodeBase {
  type: 'retry';
  /** The attempt about to be made (2 for the first retry). */
  attempt: number;
  delay_ms: number;
  code: string;
  text: string;
  why: string;
}

export type MarkKind = 'claim' | 'cancel' | 'replace' | 'move';

/** An inbox event worth seeing. */
export interface IMarkNode extends INodeBase {
  type: 'mark';
  mark: MarkKind;
  /** `next-step` or `next-turn`. */
  queue: string;
  /** The labels of the messages it is about. */
  items: string[];
  text: string;
}

/** The first own event of a fork (top-level). */
export interface IForkedNode extends INodeBase {
  type: 'forked';
  parent_session: string;
  /** The last copied seq. */
  at: number;
  /** The turn it was forked before. */
  turn: number | null;
  text: string;
}

/** A what-if replay's edit, first among the replayed turn's children. */
export interface IReplayedNode extends INodeBase {
  type: 'replayed';
  /** The parent's turn it re-enacts. */
  parent_turn: number;
  text: string;
}

/** A node of the timeline, discriminated by `type` (a renderer skips node types it does not know). */
export type ViewNode =
  | ITurnNode
  | IStepNode
  | IMessageNode
  | IAssistantNode
  | IToolNode
  | IApprovalNode
  | IProposalNode
  | IWarningNode
  | IRetryNode
  | IMarkNode
  | IForkedNode
  | IReplayedNode;

/** A pending message, in queue order. */
export interface IInboxItem extends IMessageFields {
  id: string;
  queue: string;
  /** Badge and label, or badge and the quoted first line: `followup «And last year?»`. */
  summary: string;
  /** What the item will add to the next request. */
  tokens: number;
  tokens_text: string;
  cut?: boolean;
}

/** Messages still waiting in the inbox (the model has not seen them). */
export interface IPendingQueues {
  next_step: IInboxItem[];
  next_turn: IInboxItem[];
}

/** A one-turn bundle's turn (`null`: a live cell whose message still waits in the inbox). */
export interface IBundleScope {
  turn: number | null;
}

/** Where a live cell's session lives. */
export interface ISessionRef {
  id: string;
  /** The SQLite file relative to the kernel's working directory; `null` for PostgreSQL. */
  file: string | null;
}

/** The session's token totals (SPEC §12); cost is worked out when the bundle is made. */
export interface IUsageSummary {
  requests: number;
  input_tokens: number;
  output_tokens: number;
  cached_input_tokens: number;
  /** A decimal string in US dollars, or `null` when unknown. */
  cost: string | null;
  estimated_tokens: number;
  cost_text: string;
  last_request: ITokenEstimate | null;
  /** The one line `%agent status` shows. */
  text: string;
}

/** `application/vnd.nbagent.timeline+json` (docs/timeline-json.md, *The bundle*). */
export interface ITimelineBundle {
  version: number;
  /** Events folded (the next expected seq). */
  seq: number;
  /** `null` for the whole session. */
  scope: IBundleScope | null;
  headline: string | null;
  /** `idle` or `running` (an inbox view: the agent's status). */
  status: string;
  status_text: string;
  summary: string;
  /** Every node in scope, flat, in log order; a parent always before its children. */
  nodes: ViewNode[];
  pending: IPendingQueues;
  omitted_turns: number;
  usage: IUsageSummary | null;
  /** Only in a live cell's bundle. */
  session?: ISessionRef | null;
  /** Only in a window (the lab server's session tab): the first turn it holds. */
  first_turn?: number;
  /** Only in a page of a window: the last turn it holds. */
  last_turn?: number;
  /** Only in a window: the log's length when the server read it. */
  log_seq?: number;
  /** Only in a page of a window: whether it was folded to its end. */
  complete?: boolean;
  /** Only in an inbox widget's saved view: paint the pending queues alone. */
  view?: 'inbox';
}

/** What the timeline widget needs for a first render (full text). */
export interface ITimelineSnapshot {
  seq: number;
  nodes: ViewNode[];
}

export interface IInboxQueue {
  /** `next_step` or `next_turn`. */
  key: string;
  /** `next-step` or `next-turn`. */
  name: string;
  hint: string;
  items: IInboxItem[];
}

/** The inbox widget's model: both pending queues and the agent's status. */
export interface IInboxModel {
  status: string;
  status_text: string;
  pending: number;
  pending_text: string;
  queues: IInboxQueue[];
  /** Why the widget's last action failed (the widget adds it). */
  error?: string;
}

export type DiffMark = 'same' | 'added' | 'removed' | 'moved';

export type DiffSymbol = '=' | '+' | '-' | '~';

/** One message of a step's request on one side. */
export interface IDiffRow {
  id: string;
  role: string;
  kind: string;
  badge: string;
  label: string;
  first_line: string;
  tokens_text: string;
  mark: DiffMark;
  symbol: DiffSymbol;
  /** A moved row names the step it is in on the other side. */
  mark_text: string;
  /** The same side's previous step's request already held it. */
  carried: boolean;
}

export type DiffSideName = 'a' | 'b';

export interface IDiffSide {
  side: DiffSideName;
  /** The side has no such step. */
  missing: boolean;
  rows: IDiffRow[];
  carried_count: number;
  /** `7 messages carried from step 1 · 2 differ`, or `""`. */
  carried_text: string;
  answer_text: string;
  /** The step started and failed; `answer_text` says how. */
  failed: boolean;
}

export interface IDiffStep {
  step: number;
  changed: boolean;
  answer_changed: boolean;
  /** `[[op, text]]`, op `=`, `+` or `-`, word by word (when both answers have text and differ). */
  answer_diff: string[][];
  changed_text: string;
  marks_text: string;
  sides: IDiffSide[];
}

export interface IDiffTurnRef {
  session: string;
  turn: number;
  title: string;
}

/** `application/vnd.nbagent.diff+json`: two turns side by side, step by step (SPEC §11.3). */
export interface IDiffModel {
  version: number;
  a: IDiffTurnRef;
  b: IDiffTurnRef;
  summary: string;
  identical: boolean;
  identical_text: string;
  /** `[[symbol, mark]]` in mark order. */
  legend: string[][];
  steps: IDiffStep[];
}
