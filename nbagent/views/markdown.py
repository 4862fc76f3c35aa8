"""The Markdown rendering of the view model: the session transcript (``%agent transcript``).

Typed prompts are block quotes under **You** (with their role: followup or steer); injected
context of any other kind is a fenced block under a 📎 line with its badge and label, so the two
never look alike. Ids and times are left out, so the same conversation reads the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nbagent.core.events import Event

Node = Mapping[str, Any]


def fence(text: str, info: str = "") -> str:
    """A fenced block longer than any backtick run inside ``text``."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in (text or "").splitlines() or [""])


def message_markdown(n: Node) -> str:
    """A message node or inbox item: a quoted prompt, or a fenced context under its label."""
    if n["kind"] == "user":
        return f"**You** · {n['badge']}\n\n{_quote(n['text'])}"
    via = f" · via {n['via']}" if n.get("via") else ""
    label = f" {n['label']}" if n["label"] else ""
    return f"📎 **{n['badge']}**{label}{via} · {n['size_text']}\n\n{fence(n['text'])}"


def _node(n: Node) -> str | None:
    match n["type"]:
        case "turn":
            return f"## Turn {n['turn']}"
        case "step":
            return f"### Step {n['step']}"
        case "message":
            return message_markdown(n)
        case "assistant" if n["text"].strip():
            mark = f" ({n['outcome']})" if n["outcome"] else ""
            model = f" · {n['model']}" if n["model"] else ""
            return f"**Assistant**{model}{mark}\n\n{n['text']}"
        case "tool":
            head = f"🔧 **{n['name']}**\n\n{fence(n['arguments'], 'json')}"
            if n["result"] is None:
                return head + "\n\n↳ *still running*"
            label = n["outcome"] if n["is_error"] else "result"
            return f"{head}\n\n↳ {label}\n\n{fence(n['result'])}"
        case "mark" if n["mark"] != "claim":
            return f"*{n['text'][:1].upper()}{n['text'][1:]}*"
        case "approval" | "retry":
            return f"*{n['text']}*"
        case _ if isinstance(n.get("text"), str) and n["type"] not in ("mark", "assistant"):
            return f"*{n['text']}*"  # a node type this renderer has no case for: its words
    return None


def transcript_markdown(bundle: Mapping[str, Any], *, title: str | None = None) -> str:
    """Markdown for a whole-session bundle (take it with ``max_text=None`` to keep every text whole)."""
    out: list[str] = [f"# {title}"] if title else []
    closing: dict[str, str] = {}
    for n in bundle["nodes"]:
        if n["type"] == "turn" and n["outcome"]:
            why = f"\n\n> {n['why']}" if n["why"] and n["why"] != n["outcome"] else ""
            closing[n["id"]] = f"*Turn {n['turn']}: {n['outcome']}*{why}"
    open_turn: str | None = None
    for n in bundle["nodes"]:
        if n["type"] == "turn" or n["parent"] is None:
            if open_turn in closing:
                out.append(closing.pop(open_turn))
            open_turn = n["id"] if n["type"] == "turn" else None
        text = _node(n)
        if text is not None:
            out.append(text)
    if open_turn in closing:
        out.append(closing.pop(open_turn))
    waiting = [(q["name"], m) for q in _queues(bundle) for m in q["items"]]
    if waiting:
        out.append("## Pending (the model has not seen these yet)")
        out.extend(f"*{queue}*\n\n{message_markdown(m)}" for queue, m in waiting)
    return "\n\n".join(out) + "\n"


def _queues(bundle: Mapping[str, Any]) -> list[dict[str, Any]]:
    pending = bundle["pending"]
    return [
        {"name": "next-step", "items": pending["next_step"]},
        {"name": "next-turn", "items": pending["next_turn"]},
    ]


def transcript(events: Iterable[Event], *, title: str | None = None) -> str:
    """Markdown for a session log: turns, steps, prompts vs. context, answers, tools, outcomes,
    and the messages still pending in the inbox (not yet seen by the model)."""
    from nbagent.views.bundle import timeline_json

    return transcript_markdown(timeline_json(events, max_text=None), title=title)
