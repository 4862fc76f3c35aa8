"""The inbox rendering of the view model: both pending queues, their items, and a status pill."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from nbagent.core.estimate import CHARS, TokenCounter, content_tokens
from nbagent.log.events import NEXT_STEP, NEXT_TURN
from nbagent.views.escape import visible_controls
from nbagent.views.labels import describe_message
from nbagent.views.schema import InboxItem, InboxModel, InboxQueue
from nbagent.views.text import plural

QUEUES = (
    ("next_step", NEXT_STEP, "context and steering: sent with the next step"),
    ("next_turn", NEXT_TURN, "followups: one turn each, in order"),
)
STATUS_TEXT = {"idle": "agent idle", "running": "agent running", "closed": "session closed"}


def inbox_item(message: Any, queue: str, counter: TokenCounter = CHARS) -> InboxItem:
    """One pending message as every inbox shows it (a ``Message`` or its stored JSON), with the
    tokens it will add to the next request (counted as the meter counts it)."""
    label = describe_message(message, queue=queue)
    ident = message.id if hasattr(message, "id") else message.get("id", "")
    content = message.content if hasattr(message, "content") else message.get("content") or ()
    tokens = content_tokens(content, counter)
    return InboxItem(id=str(ident), queue=queue, **label.fields(), summary=label.summary,
                     tokens=tokens, tokens_text=f"≈{tokens:,} token{'' if tokens == 1 else 's'}")  # fmt: skip


def inbox_model(next_step: Iterable[InboxItem], next_turn: Iterable[InboxItem], status: str) -> InboxModel:
    """``{"status", "status_text", "pending", "pending_text", "queues": [{"key", "name", "hint", "items"}]}``.

    ``next_step``/``next_turn`` are items from :func:`inbox_item` (or ``Timeline.pending``).
    """
    lists = {"next_step": list(next_step), "next_turn": list(next_turn)}
    pending = sum(len(v) for v in lists.values())
    return InboxModel(
        status=status,
        status_text=STATUS_TEXT.get(status, status),
        pending=pending,
        pending_text=f"{pending} pending",
        queues=[InboxQueue(key=key, name=name, hint=hint, items=lists[key]) for key, name, hint in QUEUES],
    )


def inbox_text(inbox: Mapping[str, Any]) -> str:
    """The inbox as plain text (a terminal's repr of the inbox widget)."""
    lines = [f"Inbox · {inbox['pending_text']} · {inbox['status_text']}"]
    for queue in inbox["queues"]:
        if not queue["items"]:
            lines.append(f"  {queue['name']}: empty")
            continue
        lines.append(f"  {queue['name']}: {plural(len(queue['items']), 'message')}")
        for m in queue["items"]:
            more = f" ({m['more_text']})" if m["more_text"] else ""
            tokens = f" · {m['tokens_text']}" if m.get("tokens_text") else ""
            line = f" — {m['first_line']}" if m["label"] and m["first_line"] else ""
            lines.append(
                f"    [{m['badge']}] {m['label'] or m['first_line']}{line}{more} · {m['size_text']}{tokens}"
            )
    return visible_controls("\n".join(lines))
