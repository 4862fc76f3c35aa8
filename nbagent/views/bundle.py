"""The JSON rendering: the ``application/vnd.nbagent.timeline+json`` bundle (docs/timeline-json.md)."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, cast

from nbagent.log.events import NEXT_STEP, NEXT_TURN
from nbagent.views.meter import UsageTally
from nbagent.views.schema import InboxItem, PendingQueues, TimelineBundle, TurnNode, ViewNode
from nbagent.views.text import clip, plural

Node = ViewNode
"""A node of the view model (one ``TypedDict`` per node type: nbagent/views/schema.py)."""

N = TypeVar("N", ViewNode, InboxItem)


class Folded(Protocol):
    """What the bundle reads of a fold (:class:`nbagent.views.timeline.Timeline`)."""

    nodes: dict[str, Node]
    pending: dict[str, list[InboxItem]]
    open_turn: int | None
    seq: int
    usage: UsageTally

    def turn_nodes(self, turn: int) -> list[Node]: ...


TIMELINE_MIME = "application/vnd.nbagent.timeline+json"
VERSION = 1
LONG_FIELDS = ("text", "reasoning", "arguments", "result", "why")
"""The text fields ``max_text`` cuts (one-line fields are short already)."""


def cut_node(node: N, max_text: int | None) -> N:
    """A copy of ``node`` whose long text fields are cut to about ``max_text`` characters."""
    out: dict[str, Any] = dict(node)
    if max_text is not None:
        for field in LONG_FIELDS:
            value = out.get(field)
            if isinstance(value, str) and len(value) > max_text:
                out[field] = clip(value, max_text)
                out["cut"] = True
    return cast(N, out)


def recent_nodes(nodes: list[Node], max_turns: int) -> tuple[list[Node], int]:
    """Keep the nodes of the last ``max_turns`` turns; older turns keep only their head node."""
    turns = [n["id"] for n in nodes if n["type"] == "turn"]
    if len(turns) <= max_turns:
        return nodes, 0
    old = set(turns[:-max_turns])
    top: dict[str, str] = {}
    out: list[Node] = []
    for n in nodes:
        root = top[n["id"]] = n["id"] if n["parent"] is None else top.get(n["parent"], n["parent"])
        if n["id"] in old:
            head = cast(TurnNode, dict(n))
            head["omitted"] = True
            out.append(head)
        elif root not in old:
            out.append(n)
    return out, len(old)


def bundle_json(
    timeline: Folded,
    *,
    turn: int | None = None,
    headline: str | None = None,
    max_text: int | None = 4000,
    max_turns: int | None = None,
) -> TimelineBundle:
    """The bundle of ``timeline``: the whole session, or with ``turn`` that turn's subtree only."""
    omitted = 0
    if turn is None:
        nodes = list(timeline.nodes.values())
        turns = [n for n in nodes if n["type"] == "turn"]
        if max_turns is not None:
            nodes, omitted = recent_nodes(nodes, max_turns)
        running = timeline.open_turn is not None
        pending = PendingQueues(
            next_step=[cut_node(m, max_text) for m in timeline.pending.get(NEXT_STEP, ())],
            next_turn=[cut_node(m, max_text) for m in timeline.pending.get(NEXT_TURN, ())],
        )
        summary = f"{plural(len(turns), 'turn')} · {plural(timeline.seq, 'event')}"
    else:
        nodes = timeline.turn_nodes(turn)
        head = cast(TurnNode, nodes[0]) if nodes else None  # turn_nodes starts with the turn's node
        running = head is not None and head["status"] == "running"
        pending = PendingQueues(next_step=[], next_turn=[])
        summary = head["outcome"] if head and head["outcome"] else ("running" if head else "queued")
    return TimelineBundle(
        version=VERSION,
        seq=timeline.seq,
        scope=None if turn is None else {"turn": turn},
        headline=headline,
        status="running" if running else "idle",
        status_text="running" if running else "idle",
        summary=summary,
        nodes=[cut_node(n, max_text) for n in nodes],
        pending=pending,
        omitted_turns=omitted,
        usage=timeline.usage.summary() if turn is None else None,
    )
