"""Owned runs: what became of the work an interval of the log consumed (SPEC §5.8)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nbagent.events import ASSISTANT_MESSAGE, INBOX_SPLICED, STEP_START, TURN_END, TURN_START, Event


@dataclass(frozen=True)
class Run:
    """The interval from a message's durable receipt to the next idle."""

    turns: tuple[int, ...]
    """The turns opened in the interval."""
    end: dict[str, Any] | None
    """The data of the last ``turn/end`` that accounts for work (it stepped, or claimed input and
    ended other than ``completed``)."""
    text: str | None
    """The last non-empty assistant text in the interval."""
    dropped_unrun: bool
    """After ``end``, a pending message was canceled with nothing inserted."""

    @property
    def outcome(self) -> str | None:
        """``end.reason.kind``, for convenience."""
        return None if self.end is None else self.end["reason"]["kind"]


def fold_run(events: Iterable[Event]) -> Run:
    """Fold a suffix of a log into a :class:`Run`."""
    turns: list[int] = []
    end: dict[str, Any] | None = None
    text: str | None = None
    dropped = False
    open_turn: int | None = None
    stepped = claimed = False
    for ev in events:
        t, data = ev.type, ev.data
        if t == TURN_START:
            open_turn, stepped, claimed = data["turn"], False, False
            turns.append(data["turn"])
        elif t == STEP_START:
            stepped = True
        elif t == INBOX_SPLICED and data.get("removed_count"):
            if data.get("outcome") == "canceled":
                if not data.get("inserted"):
                    dropped = True
            elif open_turn is not None:
                claimed = True
        elif t == ASSISTANT_MESSAGE:
            body = "".join(b.get("text", "") for b in data["message"]["content"] if b.get("type") == "text")
            if body.strip():
                text = body
        elif t == TURN_END:
            kind = data["reason"]["kind"]
            if stepped or (claimed and kind != "completed"):
                end = dict(data)
                dropped = False
            open_turn = None
    return Run(tuple(turns), end, text, dropped)
