"""The timeline view model: the one fold of a session's events into display nodes.

Every display paints this model: the timeline widget (nodes and patches), the live cell view (one
turn's subtree), the static HTML, the Markdown transcript, the inbox (its ``pending`` queues) and
the JSON bundle of docs/timeline-json.md. Nodes are plain JSON dicts carrying ready-made display
strings, so no painter recomputes words, units or reasons.

Feeding events returns patches, so a front end that applied every patch since a snapshot holds
exactly the nodes of a fresh fold of the same events:

- ``["add", node]`` appends a node (after its parent's earlier children);
- ``["set", id, fields]`` updates fields of a node;
- ``["text", id, field, more]`` appends ``more`` to a text field (streamed answer text).

A new event type needs its record in :mod:`nbagent.log.events` and a case in :meth:`Timeline._fold`;
every rendering then shows it (a renderer skips node types it does not know).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any, ClassVar, cast

from nbagent._json import thaw
from nbagent.log.events import (
    NEXT_STEP,
    NEXT_TURN,
    ApprovalAsked,
    ApprovalDecided,
    AssistantChunk,
    AssistantMessageEvent,
    Event,
    LlmRetry,
    RequestEstimate,
    RequestHeader,
    SessionForked,
    SessionReplayed,
    Splice,
    StepEnd,
    StepStart,
    ToolCallEvent,
    ToolResultEvent,
    TurnEnd,
    TurnStart,
    UserMessageEvent,
    parse_event,
)
from nbagent.views.bundle import Node, bundle_json
from nbagent.views.inbox import inbox_item
from nbagent.views.labels import describe_message, full_text
from nbagent.views.meter import UsageTally, counter_from_model_name, estimate_fields, warning_text
from nbagent.views.outcomes import approval_text, turn_outcome
from nbagent.views.proposals import PROPOSE_CELL, proposal_done, proposal_id, proposal_node, turn_cell
from nbagent.views.replays import replay_text
from nbagent.views.schema import (
    ApprovalNode,
    AssistantNode,
    ForkedNode,
    InboxItem,
    MarkKind,
    MarkNode,
    MessageNode,
    ProposalCell,
    ReplayedNode,
    RetryNode,
    StepNode,
    TimelineBundle,
    TimelineSnapshot,
    ToolNode,
    TurnNode,
    WarningNode,
)
from nbagent.views.text import clip, first_line, plural, summary_line

Patch = list[Any]
LINE_MAX = 160


class Timeline:
    """Folds events into nodes and the pending inbox; :meth:`feed` returns patches for new events."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.seq = 0
        """The number of events folded so far (the next expected ``seq``)."""
        self.pending: dict[str, list[InboxItem]] = {NEXT_STEP: [], NEXT_TURN: []}
        """The inbox replayed from the splices: items (label fields + ``id`` and ``queue``) in order."""
        self.open_turn: int | None = None
        self._turn: str | None = None
        self._step: str | None = None
        self._answer: str | None = None
        self._attempt = 1
        self._tools: dict[str, str] = {}  # call id -> tool node id (this turn)
        self._proposals: dict[str, str] = {}  # call id -> proposal id (this turn's propose_cell calls)
        self._turn_cell: ProposalCell | None = None  # the cell of the prompt that started this turn
        self._approvals: dict[str, str] = {}  # approval id -> node id
        self._queued: dict[str, str] = {}  # message id -> queue it was inserted into
        self._via: dict[str, str] = {}  # message id -> tool whose result added it
        self._replayed: SessionReplayed | None = None  # a session/replayed waiting for its turn/start
        self._last_result: str | None = None  # tool name, while its result is the latest event
        self._out: list[Patch] = []
        self.usage = UsageTally()
        """Tokens, usage and cost so far (the meter's part of the model, nbagent.views.meter)."""
        self.counter = counter_from_model_name("")
        """How pending items' tokens are counted: as the last ``request/header``'s model counts."""

    # -- public -----------------------------------------------------------------------------------

    def feed(self, events: Iterable[Event]) -> list[Patch]:
        """Fold ``events`` (already-seen seqs are skipped) and return the compacted patches."""
        out: list[Patch] = []
        self._out = out
        for event in events:
            if event.seq < self.seq:
                continue
            self._fold(parse_event(event))
            self.seq = event.seq + 1
        self._out = []
        return compact(out)

    def seed_pending(self, next_step: Iterable[Any], next_turn: Iterable[Any]) -> None:
        """Start from the inbox as it is (a fold that begins mid-log, as a live cell's does), so
        its claim marks name the messages they took."""
        for queue, messages in ((NEXT_STEP, next_step), (NEXT_TURN, next_turn)):
            self.pending[queue] = [inbox_item(m, queue, self.counter) for m in messages]
            for m in self.pending[queue]:
                self._queued[m["id"]] = queue

    def snapshot(self) -> TimelineSnapshot:
        """What the widget needs for a first render: ``{"seq", "nodes"}`` (full text)."""
        return TimelineSnapshot(seq=self.seq, nodes=list(self.nodes.values()))

    def to_json(
        self,
        *,
        turn: int | None = None,
        headline: str | None = None,
        max_text: int | None = 4000,
        max_turns: int | None = None,
    ) -> TimelineBundle:
        """The ``application/vnd.nbagent.timeline+json`` bundle (docs/timeline-json.md)."""
        return bundle_json(self, turn=turn, headline=headline, max_text=max_text, max_turns=max_turns)

    def turn_nodes(self, turn: int) -> list[Node]:
        """Turn ``turn`` and its descendants, in log order."""
        root = f"turn-{turn}"
        if root not in self.nodes:
            return []
        keep = {root}
        out = []
        for node in self.nodes.values():
            if node["id"] == root or node["parent"] in keep:
                keep.add(node["id"])
                out.append(node)
        return out

    # -- patches ----------------------------------------------------------------------------------

    def _add(self, node: Node) -> None:
        self.nodes[node["id"]] = node
        self._out.append(["add", dict(node)])

    def _set(self, node_id: str, **fields: Any) -> None:
        """Update fields of a node (the fields its type declares in nbagent/views/schema.py:
        tests/test_view_types.py checks that a folded session writes no other)."""
        cast("dict[str, Any]", self.nodes[node_id]).update(fields)
        self._out.append(["set", node_id, fields])

    def _append(self, node_id: str, field: str, more: str) -> None:
        node = cast("dict[str, Any]", self.nodes[node_id])
        node[field] += more
        self._out.append(["text", node_id, field, more])

    def _turn_at(self, node_id: str) -> TurnNode:
        return cast(TurnNode, self.nodes[node_id])

    def _answer_at(self, node_id: str) -> AssistantNode:
        return cast(AssistantNode, self.nodes[node_id])

    # -- the fold ---------------------------------------------------------------------------------

    def _fold(self, ev: Any) -> None:
        result_before, self._last_result = self._last_result, None
        if isinstance(ev, Splice):  # a splice right after a tool result came with that result
            self._splice(ev, result_before)
            return
        fold = self._FOLDS.get(type(ev))
        if fold is not None:
            fold(self, ev)

    def _turn_start(self, ev: TurnStart) -> None:
        self._open_turn(ev.turn, ev.seq, ev.time)

    def _step_start(self, ev: StepStart) -> None:
        turn, step = ev.turn, ev.step
        parent = self._ensure_turn(turn, ev.seq, ev.time)
        self._step = f"step-{turn}-{step}"
        self._answer, self._attempt = None, 1
        self._add(StepNode(id=self._step, type="step", parent=parent, seq=ev.seq,
                           turn=turn, step=step, label=f"step {step}"))  # fmt: skip
        self._set(parent, steps=step, steps_text=plural(step, "step"))

    def _step_end(self, ev: StepEnd) -> None:
        if self._answer is not None and self._answer_at(self._answer)["streaming"]:
            self._settle(self._answer)
        self._step = self._answer = None

    def _chunk(self, ev: AssistantChunk) -> None:
        if ev.kind in ("text", "reasoning") and ev.text:
            self._append(self._answer_node(ev), "text" if ev.kind == "text" else "reasoning", ev.text)

    def _tool_call(self, ev: ToolCallEvent) -> None:
        node_id = f"tool-{ev.turn}-{ev.step}-{ev.call_id}"
        self._tools[ev.call_id] = node_id
        if ev.name == PROPOSE_CELL:
            self._proposals[ev.call_id] = proposal_id(ev.turn, len(self._proposals) + 1)
        self._add(ToolNode(id=node_id, type="tool", parent=self._step or self._turn, seq=ev.seq,
                           name=ev.name, call_id=ev.call_id, arguments=ev.arguments,
                           arguments_text=clip(" ".join(ev.arguments.split()), LINE_MAX), result=None,
                           result_line="", is_error=False, error_code=None, outcome="running"))  # fmt: skip

    def _approval_asked(self, ev: ApprovalAsked) -> None:
        node_id = f"approval-{ev.seq}"
        self._approvals[ev.id] = node_id
        self._add(ApprovalNode(id=node_id, type="approval", parent=self._step or self._turn,
                               seq=ev.seq, tool=ev.tool, call_id=ev.call_id, outcome=None,
                               text=approval_text(ev.tool, None)))  # fmt: skip

    def _approval_decided(self, ev: ApprovalDecided) -> None:
        node_id = self._approvals.pop(ev.id, None)
        if node_id in self.nodes:
            shown = ev.shown_outcome
            self._set(node_id, outcome=shown, text=approval_text(ev.tool, shown))

    def _forked(self, ev: SessionForked) -> None:
        where = f"before turn {ev.turn}" if ev.turn is not None else f"at seq {ev.at}"
        self._add(ForkedNode(id=f"forked-{ev.seq}", type="forked", parent=None, seq=ev.seq,
                             parent_session=ev.parent, at=ev.at, turn=ev.turn,
                             text=f"forked from {ev.parent} {where}"))  # fmt: skip

    def _replayed_turn(self, ev: SessionReplayed) -> None:  # written just before the turn it replays
        self._replayed = ev

    def _header(self, ev: RequestHeader) -> None:
        self.counter = counter_from_model_name(ev.model)

    def _open_turn(self, turn: int, seq: int, time: int) -> str:
        self._turn = f"turn-{turn}"
        self.open_turn = turn
        self._step = self._answer = None
        self._tools, self._proposals, self._turn_cell = {}, {}, None
        self._add(TurnNode(id=self._turn, type="turn", parent=None, seq=seq, turn=turn,
                           status="running", status_text="running", title="", outcome="", why=None,
                           steps=0, steps_text=plural(0, "step"), start=time, end=None,
                           duration_text=""))  # fmt: skip
        replayed, self._replayed = self._replayed, None
        if replayed is not None:
            text = replay_text(replayed)
            self._set(self._turn, replay_text=text)
            self._add(ReplayedNode(id=f"replayed-{replayed.seq}", type="replayed", seq=replayed.seq,
                                   parent_turn=replayed.parent_turn, text=text, parent=self._turn))  # fmt: skip
        return self._turn

    def _ensure_turn(self, turn: int, seq: int, time: int) -> str:
        """The node of ``turn``; opened here when the fold starts inside it (a view of one turn)."""
        node_id = f"turn-{turn}"
        if node_id not in self.nodes:
            return self._open_turn(turn, seq, time)
        return node_id

    def _end_turn(self, ev: TurnEnd) -> None:
        node_id = self._ensure_turn(ev.turn, ev.seq, ev.time)
        node = self._turn_at(node_id)
        outcome = turn_outcome(ev)
        self._set(node_id, status=ev.kind, status_text=outcome.status_text, outcome=outcome.line,
                  why=outcome.why, end=ev.time,
                  duration_text=f"{max(ev.time - node['start'], 0) / 1000:.1f} s")  # fmt: skip
        self._turn = self._step = self._answer = None
        self.open_turn = None

    def _message(self, ev: UserMessageEvent) -> None:
        via = self._via.pop(ev.id, None)
        label = describe_message(ev.message, queue=self._queued.pop(ev.id, None), via=via)
        node = MessageNode(id=f"msg-{ev.seq}", type="message", parent=self._step or self._turn, seq=ev.seq,
                           message_id=ev.id, **label.fields(), via=via, source=thaw(ev.source))  # fmt: skip
        self._add(node)
        if self._turn is not None and self._turn_cell is None:
            self._turn_cell = turn_cell(node["source"])
        if label.kind == "user" and self._turn in self.nodes and not self._turn_at(self._turn)["title"]:
            self._set(self._turn, title=clip(label.first_line, LINE_MAX))

    def _answer_node(self, ev: AssistantChunk | AssistantMessageEvent) -> str:
        if self._answer is None:
            suffix = f"-a{self._attempt}" if self._attempt > 1 else ""
            self._answer = f"answer-{ev.turn}-{ev.step}{suffix}"
            self._add(AssistantNode(id=self._answer, type="assistant", parent=self._step or self._turn,
                                    seq=ev.seq, text="", reasoning="", first_line="", streaming=True,
                                    interrupted=False, failed=False, calls=0, calls_text="", outcome="",
                                    model=None, usage=None))  # fmt: skip
        return self._answer

    def _settle(self, node_id: str, **fields: Any) -> None:
        """The answer stopped streaming without an ``assistant/message`` (a failure, a retry)."""
        node = self._answer_at(node_id)
        line = first_line(node["text"], LINE_MAX) or ("(reasoning)" if node["reasoning"] else "")
        self._set(node_id, streaming=False, first_line=line, **fields)

    def _answered(self, ev: AssistantMessageEvent) -> None:
        blocks = ev.blocks
        if not blocks and self._answer is None:
            return
        node_id = self._answer_node(ev)
        node = self._answer_at(node_id)
        text, reasoning, calls = ev.text, ev.reasoning, len(ev.call_ids)
        fields: dict[str, Any] = {"streaming": False, "calls": calls, "model": ev.model,
                                  "calls_text": plural(calls, "tool call") if calls else "",
                                  "first_line": first_line(text, LINE_MAX) or ("(reasoning)" if reasoning else ""),
                                  "message_id": ev.message.id}  # fmt: skip
        if node["text"] != text:
            fields["text"] = text
        if node["reasoning"] != reasoning:
            fields["reasoning"] = reasoning
        if ev.interrupted:
            fields.update(interrupted=True, outcome="interrupted")
        if ev.usage is not None:
            fields["usage"] = thaw(ev.usage)
        self.usage.add_answer(ev)  # an answer without usage still tells of an offline model
        self._set(node_id, **fields)

    def _estimate(self, ev: RequestEstimate) -> None:
        """A request's estimate: its step's tokens and bar, the turn's sum, a warning node if any."""
        self.usage.add_estimate(ev)
        target = self._step or self._turn
        if target is None:
            return
        self._set(target, **estimate_fields(ev))
        turn = self._turn
        if turn is not None and turn != target:
            sent = self._turn_at(turn).get("sent_tokens", 0) + ev.total
            self._set(turn, sent_tokens=sent, sent_tokens_text=f"≈{sent:,} tokens sent")
        if ev.warning is not None:
            self._add(WarningNode(id=f"warning-{ev.seq}", type="warning", parent=target, seq=ev.seq,
                                  warning=thaw(ev.warning), text=warning_text(ev.warning)))  # fmt: skip

    def _tool_result(self, ev: ToolResultEvent) -> None:
        block = ev.block
        result = full_text(block.get("content", ()))
        code = ev.error_code
        outcome = f"failed: {code}" if ev.is_error and code else "failed" if ev.is_error else "done"
        line = summary_line(result, LINE_MAX)
        node_id = self._tools.get(ev.call_id) or f"tool-{ev.turn}-{ev.step}-{ev.call_id}"
        if node_id in self.nodes:
            self._set(node_id, result=result, result_line=line, is_error=ev.is_error, error_code=code,
                      outcome=outcome)  # fmt: skip
            name = cast(ToolNode, self.nodes[node_id])["name"]
        else:  # crash repair: a result without a logged call
            name = "?"
            self._add(ToolNode(id=node_id, type="tool", parent=self._step or self._turn, seq=ev.seq, name=name,
                               call_id=ev.call_id, arguments="", arguments_text="", result=result,
                               result_line=line, is_error=ev.is_error, error_code=code, outcome=outcome))  # fmt: skip
        self._last_result = name
        pid = self._proposals.get(ev.call_id)
        if pid is not None and not ev.is_error:
            proposal = proposal_node(cast(ToolNode, self.nodes[node_id]), pid, ev.seq, self._turn_cell)
            if proposal is not None:
                self._add(proposal)

    def _retry(self, ev: LlmRetry) -> None:
        code = str(ev.failure.code or "?")
        message = str(ev.failure.message or "")
        text = f"retrying (attempt {ev.attempt}) in {ev.delay_ms} ms after {code}"
        self._add(RetryNode(id=f"retry-{ev.seq}", type="retry", parent=self._step or self._turn, seq=ev.seq,
                            attempt=ev.attempt, delay_ms=ev.delay_ms, code=code, text=text,
                            why=message))  # fmt: skip
        if self._answer is not None:
            self._settle(self._answer, failed=True, outcome="failed attempt")
            self._answer = None
        self._attempt += 1

    def _splice(self, ev: Splice, result_before: str | None) -> None:
        queue = self.pending.setdefault(ev.target, [])
        start = min(max(ev.start, 0), len(queue))
        removed = queue[start : start + ev.removed_count]
        inserted = [inbox_item(m, ev.target, self.counter) for m in ev.inserted]
        queue[start : start + ev.removed_count] = inserted
        for m in inserted:
            self._queued[m["id"]] = ev.target
        for message in ev.inserted:  # the user inserted a proposed cell: its row says so
            done = proposal_done(message.source)
            node = self.nodes.get(f"proposal-{done[0]}") if done is not None else None
            if done is not None and node is not None and node.get("done") != done[1]:  # once, not per move
                self._set(node["id"], done=done[1], done_below=done[2])
        if result_before is not None and ev.is_insert and self._turn is not None:
            for m in inserted:
                self._via[m["id"]] = result_before
            self._last_result = result_before  # several contexts of one result
        if ev.is_claim:
            self._mark(ev, "claim", removed, ev.removed_count, f"took from {ev.target}")
        elif ev.is_cancel:
            kept = {m["id"] for m in inserted}  # a replacement with the same id is an edit
            gone = [m for m in removed if m["id"] not in kept] or removed
            for m in gone:
                self._queued.pop(m["id"], None)
            what = "replaced in" if inserted else "canceled from"
            self._mark(ev, "replace" if inserted else "cancel", gone, ev.removed_count,
                       f"{what} {ev.target} before the model saw it")  # fmt: skip
        elif ev.outcome == "moved":
            self._mark(ev, "move", removed, ev.removed_count, f"moved out of {ev.target}")

    def _mark(self, ev: Splice, mark: MarkKind, items: list[InboxItem], count: int, words: str) -> None:
        names = [m["summary"] for m in items] or [plural(count, "message")]
        self._add(MarkNode(id=f"mark-{ev.seq}", type="mark", parent=self._turn, seq=ev.seq, mark=mark,
                           queue=ev.target, items=names, text=f"{words}: {', '.join(names)}"))  # fmt: skip

    _FOLDS: ClassVar[dict[type, Callable[[Timeline, Any], None]]] = {
        TurnStart: _turn_start,
        TurnEnd: _end_turn,
        StepStart: _step_start,
        StepEnd: _step_end,
        UserMessageEvent: _message,
        AssistantChunk: _chunk,
        AssistantMessageEvent: _answered,
        ToolCallEvent: _tool_call,
        ToolResultEvent: _tool_result,
        LlmRetry: _retry,
        ApprovalAsked: _approval_asked,
        ApprovalDecided: _approval_decided,
        SessionForked: _forked,
        SessionReplayed: _replayed_turn,
        RequestEstimate: _estimate,
        RequestHeader: _header,
    }
    """What each record type adds to the fold (a splice is folded apart: it needs the result before it)."""


def compact(patches: list[Patch]) -> list[Patch]:
    """Merge consecutive text appends to the same field (a streamed answer becomes one patch)."""
    out: list[Patch] = []
    for p in patches:
        prev = out[-1] if out else None
        if p[0] == "text" and prev is not None and prev[0] == "text" and prev[1:3] == p[1:3]:
            out[-1] = ["text", p[1], p[2], prev[3] + p[3]]
        else:
            out.append(p)
    return out


def project(events: Iterable[Event]) -> Timeline:
    """A fresh timeline folded over ``events``."""
    timeline = Timeline()
    timeline.feed(events)
    return timeline


def apply_patches(nodes: MutableMapping[str, Any], patches: Iterable[Patch]) -> MutableMapping[str, Any]:
    """Apply patches to a node dict in place (the Python twin of the front end's reducer)."""
    for p in patches:
        if p[0] == "add":
            nodes[p[1]["id"]] = dict(p[1])
        elif p[0] == "set":
            nodes[p[1]] = {**nodes[p[1]], **p[2]}
        elif p[0] == "text":
            nodes[p[1]] = {**nodes[p[1]], p[2]: nodes[p[1]].get(p[2], "") + p[3]}
    return nodes


def message_nodes(nodes: Mapping[str, Node]) -> list[Node]:
    """The user-role message nodes in log order (what the model received, in order)."""
    return [n for n in nodes.values() if n["type"] == "message"]


def timeline_json(
    events: Iterable[Event],
    *,
    turn: int | None = None,
    headline: str | None = None,
    max_text: int | None = 4000,
    max_turns: int | None = None,
) -> TimelineBundle:
    """Fold ``events`` and return their bundle (see :meth:`Timeline.to_json`)."""
    return bundle_json(project(events), turn=turn, headline=headline, max_text=max_text, max_turns=max_turns)
