"""The session as Markdown, a pure function of its events (``%agent transcript``).

Typed prompts (source kind ``user``) are block quotes under **You** (marked ``steer`` when sent to the
next step); injected context of any other kind is a fenced block under a 📎 heading naming its source,
so the two never look alike. A pending message canceled before the model saw it leaves a one-line
note where it was canceled. Ids and times are left out, so the same conversation reads the same.
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
from nbagent.labels import (
    block_text,
    context_label,
    is_typed_prompt,
    outcome_text,
    source_label,
)


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


def _message(data: Mapping[str, Any], queue: str | None = None) -> str:
    source = data.get("source") or {}
    text = block_text(data.get("content"))
    if is_typed_prompt(source):
        how = " · steer" if queue == NEXT_STEP else ""
        return f"**You**{how}\n\n{_quote(text)}"
    return f"📎 **Context — {source_label(source)}** ({len(text):,} chars)\n\n{_fence(text)}"


def _canceled(data: Mapping[str, Any], queue: str) -> str:
    source = data.get("source") or {}
    text = block_text(data.get("content"))
    what = "You" if is_typed_prompt(source) else f"📎 {source_label(source)}"
    return f"*Canceled from {queue} before the model saw it:* {what} «{context_label(source, text)}»"


def transcript(events: Iterable[Event], *, title: str | None = None) -> str:
    """Markdown for a session log: turns, steps, prompts vs. context, answers, tools, outcomes,
    and the messages still pending in the inbox (not yet seen by the model)."""
    out: list[str] = [f"# {title}"] if title else []
    pending: dict[str, list[Mapping[str, Any]]] = {NEXT_STEP: [], NEXT_TURN: []}
    queued_to: dict[str, str] = {}
    for ev in events:
        t, d = ev.type, ev.data
        if t == INBOX_SPLICED:
            target = d["target"]
            queue = pending[target]
            start, count = d["start"], d.get("removed_count", 0)
            inserted = list(d.get("inserted", ()))
            if d.get("outcome") == "canceled":
                kept = {m.get("id") for m in inserted}  # a replacement with the same id is an edit
                out.extend(
                    _canceled(m, target) for m in queue[start : start + count] if m.get("id") not in kept
                )
            queue[start : start + count] = inserted
            queued_to.update((m.get("id"), target) for m in inserted)
        elif t == TURN_START:
            out.append(f"## Turn {d['turn']}")
        elif t == STEP_START:
            out.append(f"### Step {d['step']}")
        elif t == USER_MESSAGE:
            out.append(_message(d, queued_to.get(d.get("id"))))
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
        out.extend(f"*{q}*\n\n{_message(m, q)}" for q, m in waiting)
    return "\n\n".join(out) + "\n"
