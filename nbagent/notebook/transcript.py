"""The session as Markdown, a pure function of its events (``%agent transcript``).

Typed prompts (source kind ``user``) are block quotes under **You**; injected context of any other
kind is a fenced block under a 📎 heading naming its source, so the two never look alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nbagent.events import (
    ASSISTANT_MESSAGE,
    INBOX_SPLICED,
    NEXT_STEP,
    NEXT_TURN,
    STEP_START,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from nbagent.notebook.labels import block_text, is_typed_prompt, outcome_text, source_label


def _fence(text: str, info: str = "") -> str:
    """A fenced block longer than any backtick run inside ``text``."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in (text or "").splitlines() or [""])


def _message(data: Mapping[str, Any]) -> str:
    source = data.get("source") or {}
    text = block_text(data.get("content"))
    if is_typed_prompt(source):
        return f"**You**\n\n{_quote(text)}"
    return f"📎 **Context — {source_label(source)}** ({len(text):,} chars)\n\n{_fence(text)}"


def transcript(events: Iterable[Event], *, title: str | None = None) -> str:
    """Markdown for a session log: turns, steps, prompts vs. context, answers, tools, outcomes,
    and the messages still pending in the inbox (not yet seen by the model)."""
    out: list[str] = [f"# {title}"] if title else []
    pending: dict[str, list[Mapping[str, Any]]] = {NEXT_STEP: [], NEXT_TURN: []}
    for ev in events:
        t, d = ev.type, ev.data
        if t == INBOX_SPLICED:
            queue = pending[d["target"]]
            start, count = d["start"], d.get("removed_count", 0)
            queue[start : start + count] = list(d.get("inserted", ()))
        elif t == TURN_START:
            out.append(f"## Turn {d['turn']}")
        elif t == STEP_START:
            out.append(f"### Step {d['step']}")
        elif t == USER_MESSAGE:
            out.append(_message(d))
        elif t == ASSISTANT_MESSAGE:
            message = d["message"]
            text = block_text(message["content"])
            model = (message.get("source") or {}).get("model") or "assistant"
            cut = " (interrupted)" if d.get("interrupted") else ""
            if text.strip():
                out.append(f"**Assistant** · {model}{cut}\n\n{text}")
        elif t == TOOL_CALL:
            out.append(f"🔧 **{d['name']}**\n\n{_fence(str(d.get('arguments', '')), 'json')}")
        elif t == TOOL_RESULT:
            block = d["message"]["content"][0]
            label = "error" if block.get("is_error") else "result"
            out.append(f"↳ tool {label}\n\n{_fence(block_text(block.get('content')))}")
        elif t == TURN_END:
            out.append(f"*Turn {d['turn']}: {outcome_text(d['reason'])}*")
    waiting = [(q, m) for q in (NEXT_STEP, NEXT_TURN) for m in pending[q]]
    if waiting:
        out.append("## Pending (the model has not seen these yet)")
        out.extend(f"*{q}*\n\n{_message(m)}" for q, m in waiting)
    return "\n\n".join(out) + "\n"
