"""The timeline view model: a pure fold of durable events into display nodes and patches.

A node is a plain JSON dict with an ``id``, a ``type`` (``turn``, ``step``, ``message``,
``assistant``, ``tool``, ``mark``) and a ``parent`` (a turn or step id, or ``None`` at the top).
Feeding events returns patches, so a front end that applied every patch since a snapshot holds
exactly the nodes of a fresh :func:`project` of the same events:

- ``["add", node]`` appends a node (after its parent's earlier children);
- ``["set", id, fields]`` updates fields of a node;
- ``["text", id, field, more]`` appends ``more`` to a text field (streamed answer text).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nbagent._json import thaw
from nbagent.events import (
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    INBOX_SPLICED,
    LLM_RETRY,
    STEP_END,
    STEP_START,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from nbagent.labels import first_line
from nbagent.widgets._describe import describe, full_text

Node = dict[str, Any]
Patch = list[Any]


class Timeline:
    """Folds events into timeline nodes; :meth:`feed` returns the patches for the new events."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.seq = 0
        """The number of events folded so far (the next expected ``seq``)."""
        self._turn: str | None = None
        self._step: str | None = None
        self._answer: str | None = None
        self._attempt = 1
        self._tool_names: dict[str, str] = {}
        self._via_tool: dict[str, str] = {}
        self._last_type = ""
        self._last_call = ""

    def snapshot(self) -> dict[str, Any]:
        """Everything a front end needs for a first render."""
        return {"seq": self.seq, "nodes": list(self.nodes.values())}

    def feed(self, events: Iterable[Event]) -> list[Patch]:
        """Fold ``events`` (already-seen seqs are skipped) and return compacted patches."""
        out: list[Patch] = []
        for event in events:
            if event.seq < self.seq:
                continue
            self._fold(event, out)
            self.seq = event.seq + 1
            self._last_type = event.type
        return _compact(out)

    # -- folding ----------------------------------------------------------------------------------

    def _add(self, out: list[Patch], node: Node) -> None:
        self.nodes[node["id"]] = node
        out.append(["add", dict(node)])

    def _set(self, out: list[Patch], node_id: str, **fields: Any) -> None:
        self.nodes[node_id].update(fields)
        out.append(["set", node_id, fields])

    def _text(self, out: list[Patch], node_id: str, field: str, more: str) -> None:
        node = self.nodes[node_id]
        node[field] = node.get(field, "") + more
        out.append(["text", node_id, field, more])

    def _fold(self, ev: Event, out: list[Patch]) -> None:
        d = ev.data
        t = ev.type
        if t == TURN_START:
            self._turn = f"turn-{d['turn']}"
            self._step = None
            self._add(
                out,
                {"id": self._turn, "type": "turn", "parent": None, "seq": ev.seq, "turn": d["turn"],
                 "status": "running", "reason": None, "start": ev.time, "end": None, "steps": 0, "title": None},
            )  # fmt: skip
        elif t == TURN_END:
            turn_id = f"turn-{d['turn']}"
            if turn_id in self.nodes:
                reason = thaw(d.get("reason") or {})
                self._set(out, turn_id, status=reason.get("kind", "completed"), reason=reason, end=ev.time)
            self._turn = self._step = self._answer = None
        elif t == STEP_START:
            self._step = f"step-{d['turn']}-{d['step']}"
            self._answer, self._attempt = None, 1
            self._add(
                out,
                {"id": self._step, "type": "step", "parent": self._turn, "seq": ev.seq,
                 "turn": d["turn"], "step": d["step"], "open": True},
            )  # fmt: skip
            if self._turn in self.nodes:
                self._set(out, self._turn, steps=d["step"])
        elif t == STEP_END:
            if self._answer is not None and self.nodes[self._answer]["streaming"]:
                self._set(out, self._answer, streaming=False)
            if self._step in self.nodes:
                self._set(out, self._step, open=False)
            self._step = self._answer = None
        elif t == USER_MESSAGE:
            node = {"id": f"msg-{ev.seq}", "type": "message", "parent": self._step or self._turn,
                    "seq": ev.seq, "via_tool": self._via_tool.pop(d.get("id", ""), None), **describe(d)}  # fmt: skip
            self._add(out, node)
            turn = self.nodes.get(self._turn or "")
            if node["kind"] == "user" and turn is not None and turn["title"] is None:
                self._set(out, turn["id"], title=node["first_line"])
        elif t == ASSISTANT_CHUNK:
            self._chunk(ev, out)
        elif t == ASSISTANT_MESSAGE:
            self._answered(ev, out)
        elif t == TOOL_CALL:
            node_id = f"tool-{d['turn']}-{d['step']}-{d['call_id']}"
            self._tool_names[d["call_id"]] = d["name"]
            self._add(
                out,
                {"id": node_id, "type": "tool", "parent": self._step, "seq": ev.seq, "name": d["name"],
                 "call_id": d["call_id"], "arguments": str(d.get("arguments", "")), "result": None,
                 "is_error": False, "error_code": None},
            )  # fmt: skip
        elif t == TOOL_RESULT:
            self._tool_result(ev, out)
        elif t == INBOX_SPLICED:
            self._splice(ev, out)
        elif t == LLM_RETRY:
            failure = d.get("failure") or {}
            text = f"attempt {d.get('attempt')} in {d.get('delay_ms')} ms after {failure.get('code', '?')}"
            if failure.get("message"):
                text += f" ({first_line(str(failure['message']), 100)})"
            self._mark(ev, out, "retry", text, parent=self._step)
            if self._answer is not None:
                self._set(out, self._answer, streaming=False, failed=True)
                self._answer = None
            self._attempt += 1
        elif t == APPROVAL_ASKED:
            self._mark(ev, out, "approval", f"approval asked for {d.get('tool')}", parent=self._step)
        elif t == APPROVAL_DECIDED:
            self._mark(
                ev, out, "approval", f"approval {d.get('outcome')} for {d.get('tool')}", parent=self._step
            )

    def _mark(
        self, ev: Event, out: list[Patch], mark: str, text: str, parent: str | None = None, **extra: Any
    ) -> None:
        node = {"id": f"mark-{ev.seq}", "type": "mark", "parent": parent or self._turn, "seq": ev.seq,
                "mark": mark, "text": text}  # fmt: skip
        self._add(out, {**node, **extra})

    def _answer_node(self, ev: Event, out: list[Patch]) -> str:
        if self._answer is None:
            d = ev.data
            suffix = f"-a{self._attempt}" if self._attempt > 1 else ""
            self._answer = f"answer-{d['turn']}-{d['step']}{suffix}"
            self._add(
                out,
                {"id": self._answer, "type": "assistant", "parent": self._step, "seq": ev.seq, "text": "",
                 "reasoning": "", "streaming": True, "interrupted": False, "failed": False, "usage": None,
                 "calls": 0},
            )  # fmt: skip
        return self._answer

    def _chunk(self, ev: Event, out: list[Patch]) -> None:
        chunk = ev.data.get("chunk") or {}
        kind = chunk.get("type")
        if kind == "text" and chunk.get("text"):
            self._text(out, self._answer_node(ev, out), "text", chunk["text"])
        elif kind == "reasoning" and chunk.get("text"):
            self._text(out, self._answer_node(ev, out), "reasoning", chunk["text"])

    def _answered(self, ev: Event, out: list[Patch]) -> None:
        d = ev.data
        message = d.get("message") or {}
        blocks = message.get("content") or ()
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        reasoning = "".join(b.get("text", "") for b in blocks if b.get("type") == "reasoning")
        calls = sum(1 for b in blocks if b.get("type") == "tool-call")
        if not blocks and self._answer is None:
            return
        node_id = self._answer_node(ev, out)
        node = self.nodes[node_id]
        fields: dict[str, Any] = {"streaming": False, "calls": calls, "message_id": message.get("id")}
        if node["text"] != text:
            fields["text"] = text
        if node["reasoning"] != reasoning:
            fields["reasoning"] = reasoning
        if d.get("interrupted"):
            fields["interrupted"] = True
        if d.get("usage") is not None:
            fields["usage"] = thaw(d["usage"])
        self._set(out, node_id, **fields)

    def _tool_result(self, ev: Event, out: list[Patch]) -> None:
        d = ev.data
        message = d.get("message") or {}
        blocks = message.get("content") or ()
        result = blocks[0] if blocks else {}
        call_id = result.get("tool_call_id") or (message.get("source") or {}).get("call_id", "")
        node_id = f"tool-{d['turn']}-{d['step']}-{call_id}"
        self._last_call = call_id
        error = d.get("error") or {}
        fields = {"result": full_text(result.get("content", ())), "is_error": bool(result.get("is_error")),
                  "error_code": error.get("code")}  # fmt: skip
        if node_id not in self.nodes:  # crash repair: a result without a logged call
            self._add(
                out,
                {"id": node_id, "type": "tool", "parent": self._step or self._turn, "seq": ev.seq,
                 "name": self._tool_names.get(call_id, "?"), "call_id": call_id, "arguments": "", **fields},
            )  # fmt: skip
        else:
            self._set(out, node_id, **fields)

    def _splice(self, ev: Event, out: list[Patch]) -> None:
        d = ev.data
        inserted = d.get("inserted") or ()
        removed = d.get("removed_count", 0)
        if self._last_type == TOOL_RESULT and inserted and self._turn is not None:
            call = self._tool_names.get(self._last_call, "tool")
            for m in inserted:
                self._via_tool[m.get("id", "")] = call
        if d.get("outcome") == "canceled" and removed:
            what = "replaced" if inserted else "canceled"
            self._mark(
                ev, out, "discard", f"{what} {removed} pending in {d.get('target')}", target=d.get("target")
            )
        elif removed and not inserted and "outcome" not in d:
            self._mark(ev, out, "claim", f"claimed {removed} from {d.get('target')}", target=d.get("target"))


def _compact(patches: list[Patch]) -> list[Patch]:
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


def apply_patches(nodes: dict[str, Node], patches: Iterable[Patch]) -> dict[str, Node]:
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
