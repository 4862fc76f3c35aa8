"""The Markdown rendering of the view model: the session transcript (``%agent transcript``).

Typed prompts are block quotes under **You** (with their role: followup or steer); injected
context of any other kind is a fenced block under a 📎 line with its badge and label, so the two
never look alike. Ids and times are left out, so the same conversation reads the same.

Everything from the session is data: outside the fenced blocks (whose content Markdown shows as
typed) it goes through :func:`~nbagent.views.escape.escape_markdown`, so the model's text, a
prompt, a tool or model name shows as the text it is (its own Markdown too), and no HTML, link or
image in it takes effect. ``escape=False`` gives the same layout unescaped, for ``text/plain``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from nbagent.log.events import Event
from nbagent.views.escape import escape_markdown, visible_controls

Node = Mapping[str, Any]
Escape = Callable[[str], str]


def _as_is(text: str) -> str:
    return text


def _one_line(text: object, esc: Escape) -> str:
    """A value shown inside a line (a heading, a label): whitespace runs become one space."""
    return esc(" ".join(str(text).split()))


def fence(text: str, info: str = "") -> str:
    """A fenced block longer than any backtick run inside ``text``."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def _quote(text: str, esc: Escape) -> str:
    body = esc(text or "")
    return "\n".join("> " + line if line else ">" for line in body.split("\n"))


def message_markdown(n: Node, esc: Escape = escape_markdown) -> str:
    """A message node or inbox item: a quoted prompt, or a fenced context under its label."""
    badge = _one_line(n["badge"], esc)
    if n["kind"] == "user":
        return f"**You** · {badge}\n\n{_quote(n['text'], esc)}"
    via = f" · via {_one_line(n['via'], esc)}" if n.get("via") else ""
    label = f" {_one_line(n['label'], esc)}" if n["label"] else ""
    size = _one_line(n["size_text"], esc)
    if n.get("tokens_text"):
        size += f" · {_one_line(n['tokens_text'], esc)}"
    return f"📎 **{badge}**{label}{via} · {size}\n\n{fence(n['text'])}"


def _node(n: Node, esc: Escape) -> str | None:
    match n["type"]:
        case "turn":
            return f"## Turn {_one_line(n['turn'], esc)}"
        case "step":
            tokens = f" · {_one_line(n['tokens_text'], esc)}" if n.get("tokens_text") else ""
            return f"### Step {_one_line(n['step'], esc)}{tokens}"
        case "message":
            return message_markdown(n, esc)
        case "assistant" if n["text"].strip():
            mark = f" ({_one_line(n['outcome'], esc)})" if n["outcome"] else ""
            model = f" · {_one_line(n['model'], esc)}" if n["model"] else ""
            return f"**Assistant**{model}{mark}\n\n{esc(n['text'])}"
        case "tool":
            return _tool_markdown(n, esc)
        case "mark" if n["mark"] != "claim":
            return _emphasis(f"{n['text'][:1].upper()}{n['text'][1:]}", esc)
        case "proposal":
            return f"{_emphasis(n['text'], esc)}\n\n{fence(n['code'], 'python')}"
        case "approval" | "retry":
            return _emphasis(n["text"], esc)
        case _ if isinstance(n.get("text"), str) and n["type"] not in ("mark", "assistant"):
            return _emphasis(n["text"], esc)  # a node type this renderer has no case for: its words
    return None


def _tool_markdown(n: Node, esc: Escape) -> str:
    head = f"🔧 **{_one_line(n['name'], esc)}**\n\n{fence(n['arguments'], 'json')}"
    if n["result"] is None:
        return head + "\n\n↳ *still running*"
    label = _one_line(n["outcome"], esc) if n["is_error"] else "result"
    return f"{head}\n\n↳ {label}\n\n{fence(n['result'])}"


def _emphasis(text: str, esc: Escape) -> str:
    return f"*{esc(text.strip())}*" if text.strip() else ""


def transcript_markdown(bundle: Mapping[str, Any], *, title: str | None = None, escape: bool = True) -> str:
    """Markdown for a whole-session bundle (take it with ``max_text=None`` to keep every text whole).

    Data is escaped (see the module's docstring); ``escape=False`` leaves it as it is, for a
    ``text/plain`` rendering of the same transcript.
    """
    esc: Escape = escape_markdown if escape else _as_is
    out: list[str] = [f"# {_one_line(title, esc)}"] if title else []
    closing: dict[str, str] = {}
    for n in bundle["nodes"]:
        if n["type"] == "turn" and n["outcome"]:
            why = f"\n\n{_quote(n['why'], esc)}" if n["why"] and n["why"] != n["outcome"] else ""
            closing[n["id"]] = f"*Turn {_one_line(n['turn'], esc)}: {_one_line(n['outcome'], esc)}*{why}"
    open_turn: str | None = None
    for n in bundle["nodes"]:
        if n["type"] == "turn" or n["parent"] is None:
            if open_turn in closing:
                out.append(closing.pop(open_turn))
            open_turn = n["id"] if n["type"] == "turn" else None
        text = _node(n, esc)
        if text:
            out.append(text)
    if open_turn in closing:
        out.append(closing.pop(open_turn))
    waiting = [(q["name"], m) for q in _queues(bundle) for m in q["items"]]
    if waiting:
        out.append("## Pending (the model has not seen these yet)")
        out.extend(f"*{queue}*\n\n{message_markdown(m, esc)}" for queue, m in waiting)
    usage = bundle.get("usage")
    if usage and usage.get("requests"):
        out.append(f"## Totals\n\n{_one_line(usage['text'], esc)}")
    return visible_controls("\n\n".join(out) + "\n")  # fenced blocks and the unescaped form too


def _queues(bundle: Mapping[str, Any]) -> list[dict[str, Any]]:
    pending = bundle["pending"]
    return [
        {"name": "next-step", "items": pending["next_step"]},
        {"name": "next-turn", "items": pending["next_turn"]},
    ]


def transcript(events: Iterable[Event], *, title: str | None = None, escape: bool = True) -> str:
    """Markdown for a session log: turns, steps, prompts vs. context, answers, tools, outcomes,
    and the messages still pending in the inbox (not yet seen by the model)."""
    from nbagent.views.timeline import timeline_json

    return transcript_markdown(timeline_json(events, max_text=None), title=title, escape=escape)
