"""The inbox view model: a pure function of both pending queues and the agent's status."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from nbagent.messages import Message
from nbagent.widgets._describe import describe


def item(message: Message) -> dict[str, Any]:
    """One pending message as the inbox shows it (without its full text, which can be large)."""
    d = describe(message.to_json())
    return {"id": message.id, **{k: d[k] for k in ("kind", "label", "first_line", "size")}}


def inbox_view(next_step: Iterable[Message], next_turn: Iterable[Message], status: str) -> dict[str, Any]:
    """``{"status", "next_step": [item...], "next_turn": [item...]}`` (plain JSON)."""
    return {
        "status": status,
        "next_step": [item(m) for m in next_step],
        "next_turn": [item(m) for m in next_turn],
    }
