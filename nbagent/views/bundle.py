"""The JSON rendering: the ``application/vnd.nbagent.timeline+json`` bundle (docs/timeline-json.md)."""

from __future__ import annotations

from typing import Any, Protocol

from nbagent.log.events import NEXT_STEP, NEXT_TURN
from nbagent.views.text import clip, plural

Node = dict[str, Any]


class Folded(Protocol):
    """What the bundle reads of a fold (:class:`nbagent.views.timeline.Timeline`)."""

    nodes: dict[str, Node]
    pending: dict[str, list[Node]]
    open_turn: int | None
    seq: int

    def turn_nodes(self, turn: int) -> list[Node]: ...


TIMELINE_MIME = "application/vnd.nbagent.timeline+json"
VERSION = 1
LONG_FIELDS = ("text", "reasoning", "arguments", "result", "why")
"""The text fields ``max_text`` cuts (one-line fields are short already)."""


def cut_node(node: Node, max_text: int | None) -> Node:
    """A copy of ``node`` whose long text fields are cut to about ``max_text`` characters."""
    out = dict(node)
    if max_text is None:
        return out
    for field in LONG_FIELDS:
        value = out.get(field)
        if isinstance(value, str) and len(value) > max_text:
            out[field] = clip(value, max_text)
            out["cut"] = True
    return out


def recent_nodes(nodes: list[Node], max_turns: int) -> tuple[list[Node], int]:
    """Keep the nodes of the last ``max_turns`` turns; older turns keep only their head node."""
    turns = [n["id"] for n in nodes if n["type"] == "turn"]
    if len(turns) <= max_turns:
        return nodes, 0
    old = set(turns[:-max_turns])
    top: dict[str, str] = {}
    out = []
    for n in nodes:
        root = top[n["id"]] = n["id"] if n["parent"] is None else top.get(n["parent"], n["parent"])
        if n["id"] in old:
            out.append({**n, "omitted": True})
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
) -> dict[str, Any]:
    """The bundle of ``timeline``: the whole session, or with ``turn`` that turn's subtree only."""
    omitted = 0
    if turn is None:
        nodes = list(timeline.nodes.values())
        turns = [n for n in nodes if n["type"] == "turn"]
        if max_turns is not None:
            nodes, omitted = recent_nodes(nodes, max_turns)
        running = timeline.open_turn is not None
        pending = {
            key: [cut_node(m, max_text) for m in timeline.pending.get(queue, ())]
            for key, queue in (("next_step", NEXT_STEP), ("next_turn", NEXT_TURN))
        }
        summary = f"{plural(len(turns), 'turn')} · {plural(timeline.seq, 'event')}"
    else:
        nodes = timeline.turn_nodes(turn)
        running = bool(nodes) and nodes[0]["status"] == "running"
        pending = {"next_step": [], "next_turn": []}
        summary = nodes[0]["outcome"] if nodes and nodes[0]["outcome"] else ("running" if nodes else "queued")
    return {
        "version": VERSION,
        "seq": timeline.seq,
        "scope": None if turn is None else {"turn": turn},
        "headline": headline,
        "status": "running" if running else "idle",
        "status_text": "running" if running else "idle",
        "summary": summary,
        "nodes": [cut_node(n, max_text) for n in nodes],
        "pending": pending,
        "omitted_turns": omitted,
        "usage": timeline.usage.summary() if turn is None else None,
    }
