"""The view models' JSON, typed: one ``TypedDict`` per node type of the timeline bundle, the bundle
itself, its pending items and usage totals, the inbox model and the turn diff.

docs/timeline-json.md says what the fields mean; these types say which fields there are. The
builders (timeline.py, proposals.py, inbox.py, labels.py, meter.py, bundle.py, diff.py) construct
them, so a type checker catches a misspelt field where it is written. ``scripts/gen_view_types.py``
writes the same types as TypeScript (``labextension/src/widgets/view_model.d.ts``) for the shared painter and
the lab extension, and tests/test_view_types.py fails when that file is stale or when a folded
session writes a field its type does not declare.

A field's docstring (the string after it) becomes its comment in the TypeScript file. This module has
no ``from __future__ import annotations``: with string annotations a ``TypedDict`` cannot tell its
``NotRequired`` keys at run time (``__required_keys__``), which the generator and the tests read.
"""

from typing import Any, Literal, TypeAlias

from typing_extensions import NotRequired, TypedDict

# -- parts of nodes ----------------------------------------------------------------------------------


class TokenEstimate(TypedDict):
    """A request's estimate (``request/estimate``): its tokens in total and by source kind."""

    total: int
    by_source: dict[str, int]
    """Tokens by source kind (``dataframe``, ``user``, ``system``, ``tools``…)."""
    counter: str
    """``chars`` (the estimate) or ``tiktoken`` (the model's tokenizer)."""
    window: int | None
    """The model's context window, when known."""


class BarPart(TypedDict):
    """One part of a step's stacked bar (colour it by ``kind``, as the message badges are)."""

    kind: str
    tokens: int
    share: float
    """Its share of the request's total, 0–1."""
    text: str
    """``dataframe: 1,200 tokens``."""


class EstimateFields(TypedDict):
    """What a step (or a blocked turn) shows of its request's estimate."""

    tokens: TokenEstimate
    tokens_text: str
    """``≈2,340 tokens in · 2% of the 128,000-token window``."""
    bar: list[BarPart]
    """The stacked bar, in kind order."""


class WarningItem(TypedDict):
    """One of the largest messages a context warning names."""

    source: str
    label: str
    tokens: int


class ContextWarning(TypedDict):
    """A request estimated above 90 % of the context window, as ``request/estimate`` stored it."""

    threshold: float
    estimate: int
    window: int
    largest: list[WarningItem]


class ProviderUsage(TypedDict, total=False):
    """Token usage as the provider reported it (``input_tokens`` includes the cached ones)."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int


class ProposalCell(TypedDict, total=False):
    """The cell of the prompt that started a turn: where a proposed cell is inserted."""

    execution_count: int | None
    cell_id: str | None


class MessageFields(TypedDict):
    """How a message is named wherever it is shown (``nbagent.views.labels.Label.fields``)."""

    kind: str
    """The source kind (``user``, ``cell``, ``dataframe``…; tolerate unknown kinds): the badge colour key."""
    role: str
    """``followup``, ``steer``, ``prompt``, ``context`` or ``tool-context``."""
    badge: str
    """The badge's words: ``followup``, ``steer``, ``dataframe``, ``recall``…"""
    label: str
    """A short name (``df · 50×3 · pandas``); may be ``""``."""
    first_line: str
    """The first line that says something, cut at a word."""
    more_lines: int
    """Lines of the text beyond the first."""
    more_text: str
    """``+12 lines``, or ``""``."""
    size: int
    """Bytes of the text (UTF-8)."""
    size_text: str
    """``812 B``, ``4.1 kB``."""
    text: str
    """The content as the model received it."""


# -- nodes -------------------------------------------------------------------------------------------


class NodeBase(TypedDict):
    """What every node has (docs/timeline-json.md, *Nodes*)."""

    id: str
    """Stable identity: ``turn-3``, ``step-3-1``, ``msg-17``, ``answer-3-1``, ``tool-3-1-c1``…"""
    parent: str | None
    """The id of the enclosing turn or step; ``null`` at the top."""
    seq: int
    """The seq of the event that created it."""
    cut: NotRequired[bool]
    """``true`` when a long text field of this node was shortened (``max_text``)."""


class TurnNode(NodeBase):
    """A turn: its head (number, prompt, outcome, steps, time, status) and, inside, its children."""

    type: Literal["turn"]
    turn: int
    status: str
    """``running``, ``completed``, ``max-tokens``, ``blocked``, ``aborted``, ``error``, ``interrupted``."""
    status_text: str
    """The status pill's words."""
    title: str
    """The first line of the turn's first typed prompt (``""`` if none)."""
    outcome: str
    """One line for the turn head (``""`` while running)."""
    why: str | None
    """The full failure text when the turn did not complete; ``null`` otherwise."""
    steps: int
    steps_text: str
    start: int
    """Unix ms of ``turn/start``."""
    end: int | None
    """Unix ms of ``turn/end``; ``null`` while running."""
    duration_text: str
    sent_tokens: NotRequired[int]
    """The sum of its steps' estimates."""
    sent_tokens_text: NotRequired[str]
    tokens: NotRequired[TokenEstimate]
    """A turn blocked by ``context_limit = "block"``: the rejected request's estimate."""
    tokens_text: NotRequired[str]
    bar: NotRequired[list[BarPart]]
    replay_text: NotRequired[str]
    """A replayed turn's edit in words (absent on a turn that is no replay)."""
    omitted: NotRequired[bool]
    """``true`` when the turn's children were left out (``max_turns``)."""


class StepNode(NodeBase):
    """A step of a turn (one model request); its estimate arrives with ``request/estimate``."""

    type: Literal["step"]
    turn: int
    step: int
    label: str
    """``step 2``."""
    tokens: NotRequired[TokenEstimate]
    tokens_text: NotRequired[str]
    bar: NotRequired[list[BarPart]]


class MessageNode(NodeBase, MessageFields):
    """A user-role message the model received."""

    type: Literal["message"]
    message_id: str
    via: str | None
    """The tool whose result added this context, e.g. ``lookup``."""
    source: dict[str, Any]
    """The stored source, as JSON."""


class AssistantNode(NodeBase):
    """One model answer, streamed then settled."""

    type: Literal["assistant"]
    text: str
    """The answer text (grows while streaming)."""
    reasoning: str
    first_line: str
    streaming: bool
    interrupted: bool
    """Cut off by a cancel (the visible prefix was kept)."""
    failed: bool
    """This attempt failed and was retried (a later answer node replaces it)."""
    calls: int
    calls_text: str
    outcome: str
    """``""``, ``interrupted``, or ``failed attempt``."""
    model: str | None
    usage: ProviderUsage | None
    message_id: NotRequired[str]
    """The answer's message id, once it is settled."""
    md: NotRequired[list[Any]]
    """The whole answer's Markdown as a tree (``nbagent/views/markdown_tree.py``): only in the timeline
    widget's snapshot and patches, never in a saved bundle."""


class ToolNode(NodeBase):
    """One tool call and its result."""

    type: Literal["tool"]
    name: str
    call_id: str
    arguments: str
    """The raw JSON arguments the model produced."""
    arguments_text: str
    result: str | None
    """The result text; ``null`` while the tool runs."""
    result_line: str
    is_error: bool
    error_code: str | None
    outcome: str
    """``running``, ``done``, or ``failed: <code>``."""


class ApprovalNode(NodeBase):
    """A tool waiting for, then given, a decision."""

    type: Literal["approval"]
    tool: str
    call_id: str
    outcome: str | None
    """``null`` while asked; then ``allowed-once``, ``allowed-session``, ``rejected``, ``cancelled``,
    ``unavailable``."""
    text: str


class ProposalNode(NodeBase):
    """A cell the model proposed with ``propose_cell`` (SPEC §9.7)."""

    type: Literal["proposal"]
    proposal: str
    """The proposal's id ``TURN.K``."""
    call_id: str
    code: str
    """The proposed cell's source, never cut."""
    note: str
    cell: ProposalCell | None
    text: str
    done: NotRequired[Literal["inserted", "inserted-and-ran"]]
    """What the user did with it, once the log says so."""
    done_below: NotRequired[int | None]
    """The ``In [n]`` the cell went below, when the front end said."""


class WarningNode(NodeBase):
    """A request estimated above 90 % of the context window."""

    type: Literal["warning"]
    warning: ContextWarning
    text: str


class RetryNode(NodeBase):
    """A failed model request about to be retried."""

    type: Literal["retry"]
    attempt: int
    """The attempt about to be made (2 for the first retry)."""
    delay_ms: int
    code: str
    text: str
    why: str


MarkKind: TypeAlias = Literal["claim", "cancel", "replace", "move"]


class MarkNode(NodeBase):
    """An inbox event worth seeing."""

    type: Literal["mark"]
    mark: MarkKind
    queue: str
    """``next-step`` or ``next-turn``."""
    items: list[str]
    """The labels of the messages it is about."""
    text: str


class ForkedNode(NodeBase):
    """The first own event of a fork (top-level)."""

    type: Literal["forked"]
    parent_session: str
    at: int
    """The last copied seq."""
    turn: int | None
    """The turn it was forked before."""
    text: str


class ReplayedNode(NodeBase):
    """A what-if replay's edit, first among the replayed turn's children."""

    type: Literal["replayed"]
    parent_turn: int
    """The parent's turn it re-enacts."""
    text: str


ViewNode: TypeAlias = (
    TurnNode
    | StepNode
    | MessageNode
    | AssistantNode
    | ToolNode
    | ApprovalNode
    | ProposalNode
    | WarningNode
    | RetryNode
    | MarkNode
    | ForkedNode
    | ReplayedNode
)
"""A node of the timeline, discriminated by ``type`` (a renderer skips node types it does not know)."""


# -- the bundle ----------------------------------------------------------------------------------------


class InboxItem(MessageFields):
    """A pending message, in queue order."""

    id: str
    queue: str
    summary: str
    """Badge and label, or badge and the quoted first line: ``followup «And last year?»``."""
    tokens: int
    """What the item will add to the next request."""
    tokens_text: str
    cut: NotRequired[bool]


class PendingQueues(TypedDict):
    """Messages still waiting in the inbox (the model has not seen them)."""

    next_step: list[InboxItem]
    next_turn: list[InboxItem]


class BundleScope(TypedDict):
    """A one-turn bundle's turn (``null``: a live cell whose message still waits in the inbox)."""

    turn: int | None


class SessionRef(TypedDict):
    """Where a live cell's session lives."""

    id: str
    file: str | None
    """The SQLite file relative to the kernel's working directory; ``null`` for PostgreSQL."""


class UsageSummary(TypedDict):
    """The session's token totals (SPEC §12); cost is worked out when the bundle is made."""

    requests: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    cost: str | None
    """A decimal string in US dollars, or ``null`` when unknown."""
    estimated_tokens: int
    cost_text: str
    last_request: TokenEstimate | None
    text: str
    """The one line ``%agent status`` shows."""


class TimelineBundle(TypedDict):
    """``application/vnd.nbagent.timeline+json`` (docs/timeline-json.md, *The bundle*)."""

    version: int
    seq: int
    """Events folded (the next expected seq)."""
    scope: BundleScope | None
    """``null`` for the whole session."""
    headline: str | None
    status: str
    """``idle`` or ``running`` (an inbox view: the agent's status)."""
    status_text: str
    summary: str
    nodes: list[ViewNode]
    """Every node in scope, flat, in log order; a parent always before its children."""
    pending: PendingQueues
    omitted_turns: int
    usage: UsageSummary | None
    session: NotRequired[SessionRef | None]
    """Only in a live cell's bundle."""
    first_turn: NotRequired[int]
    """Only in a window (the lab server's session tab): the first turn it holds."""
    last_turn: NotRequired[int]
    """Only in a page of a window: the last turn it holds."""
    log_seq: NotRequired[int]
    """Only in a window: the log's length when the server read it."""
    complete: NotRequired[bool]
    """Only in a page of a window: whether it was folded to its end."""
    view: NotRequired[Literal["inbox"]]
    """Only in an inbox widget's saved view: paint the pending queues alone."""


class TimelineSnapshot(TypedDict):
    """What the timeline widget needs for a first render (full text)."""

    seq: int
    nodes: list[ViewNode]


# -- the inbox widget --------------------------------------------------------------------------------


class InboxQueue(TypedDict):
    key: str
    """``next_step`` or ``next_turn``."""
    name: str
    """``next-step`` or ``next-turn``."""
    hint: str
    items: list[InboxItem]


class InboxModel(TypedDict):
    """The inbox widget's model: both pending queues and the agent's status."""

    status: str
    status_text: str
    pending: int
    pending_text: str
    queues: list[InboxQueue]
    error: NotRequired[str]
    """Why the widget's last action failed (the widget adds it)."""


# -- the turn diff -----------------------------------------------------------------------------------

DiffMark: TypeAlias = Literal["same", "added", "removed", "moved"]
DiffSymbol: TypeAlias = Literal["=", "+", "-", "~"]


class DiffRow(TypedDict):
    """One message of a step's request on one side."""

    id: str
    role: str
    kind: str
    badge: str
    label: str
    first_line: str
    tokens_text: str
    mark: DiffMark
    symbol: DiffSymbol
    mark_text: str
    """A moved row names the step it is in on the other side."""
    carried: bool
    """The same side's previous step's request already held it."""


DiffSideName: TypeAlias = Literal["a", "b"]


class DiffSide(TypedDict):
    side: DiffSideName
    missing: bool
    """The side has no such step."""
    rows: list[DiffRow]
    carried_count: int
    carried_text: str
    """``7 messages carried from step 1 · 2 differ``, or ``""``."""
    answer_text: str
    failed: bool
    """The step started and failed; ``answer_text`` says how."""


class DiffStep(TypedDict):
    step: int
    changed: bool
    answer_changed: bool
    answer_diff: list[list[str]]
    """``[[op, text]]``, op ``=``, ``+`` or ``-``, word by word (when both answers have text and differ)."""
    changed_text: str
    marks_text: str
    sides: list[DiffSide]


class DiffTurnRef(TypedDict):
    session: str
    turn: int
    title: str


class DiffModel(TypedDict):
    """``application/vnd.nbagent.diff+json``: two turns side by side, step by step (SPEC §11.3)."""

    version: int
    a: DiffTurnRef
    b: DiffTurnRef
    summary: str
    identical: bool
    identical_text: str
    legend: list[list[str]]
    """``[[symbol, mark]]`` in mark order."""
    steps: list[DiffStep]
