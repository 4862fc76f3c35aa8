"""The plain-text rendering of the view model: ``text/plain`` of live cells, terminal reprs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nbagent.views.proposals import proposal_lines
from nbagent.views.text import clip

Node = Mapping[str, Any]
ARGS_MAX = 200
RESULT_MAX = 400


def _node_lines(n: Node, indent: str) -> list[str]:
    t = n["type"]
    if t == "step":
        return [f"{indent}{n['label']}"]
    if t == "message":
        label = n["label"] or n["first_line"]
        extra = f" — {n['first_line']}" if n["label"] and n["first_line"] else ""
        via = f" (via {n['via']})" if n.get("via") else ""
        return [f"{indent}  ← [{n['badge']}] {label}{extra}{via}"]
    if t == "assistant":
        if not (n["text"] or n["reasoning"]):
            return []
        mark = f" ({n['outcome']})" if n["outcome"] else ""
        body = n["text"] or "(reasoning)"
        return [f"{indent}  assistant:{mark}", *(f"{indent}    {x}" for x in body.splitlines())]
    if t == "tool":
        lines = [f"{indent}  ⚙ {n['name']}({clip(n['arguments'], ARGS_MAX)})"]
        if n["result"] is None:
            lines.append(f"{indent}    … running")
        else:
            mark = f"✗ {n['outcome']}:" if n["is_error"] else "→"
            lines.append(f"{indent}    {mark} {clip(n['result_line'], RESULT_MAX)}")
        return lines
    if t == "mark" and n["mark"] == "claim":
        return []  # the claimed messages follow as ``←`` lines
    if t in ("mark", "approval"):
        return [f"{indent}  · {n['text']}"]
    if t == "proposal":
        return proposal_lines(n, indent)
    if t == "retry":
        why = f" ({clip(n['why'], 100)})" if n.get("why") else ""
        return [f"{indent}  … {n['text']}{why}"]
    if isinstance(n.get("text"), str):  # a node type this renderer has no case for: its words
        return [f"{indent}  · {n['text']}"]
    return []


def turn_lines(nodes: Sequence[Node], turn: Node) -> list[str]:
    """The body of one turn (its steps and items, in log order), then its outcome."""
    lines: list[str] = []
    for n in nodes:
        if n is turn:
            continue
        lines.extend(_node_lines(n, ""))
    if turn["outcome"]:
        lines.append(f"turn {turn['turn']}: {turn['outcome']}")
        if turn["why"] and turn["why"] != turn["outcome"]:
            lines.append(f"  why: {turn['why']}")
    return lines


def live_turn_text(bundle: Mapping[str, Any]) -> str:
    """A one-turn bundle as text: the headline, the turn's steps and items, its outcome."""
    nodes = bundle["nodes"]
    lines = [bundle["headline"] or ""]
    if nodes:
        lines.extend(turn_lines(nodes, nodes[0]))
    return "\n".join(lines)


def timeline_text(bundle: Mapping[str, Any], *, last: int = 10) -> str:
    """The whole-session bundle as text: a head line, then one line per recent turn."""
    turns = [n for n in bundle["nodes"] if n["type"] == "turn"]
    lines = [f"Timeline · {bundle['summary']} · {bundle['status_text']}"]
    if len(turns) > last:
        lines.append(f"  … {len(turns) - last} earlier turns")
    for n in turns[-last:]:
        title = f" «{clip(n['title'], 60)}»" if n["title"] else ""
        outcome = n["outcome"] or n["status_text"]
        replayed = f" · {n['replay_text']}" if n.get("replay_text") else ""
        lines.append(f"  Turn {n['turn']}{title} · {outcome} · {n['steps_text']}{replayed}")
    if not turns:
        lines.append("  no turns yet")
    return "\n".join(lines)
