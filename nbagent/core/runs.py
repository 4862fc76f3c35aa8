"""Owned runs: what became of the work an interval of the log consumed (SPEC §5.8)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nbagent.log.events import (
    AssistantMessageEvent,
    Event,
    Splice,
    StepStart,
    TurnEnd,
    TurnStart,
    parse_event,
)


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
    late: tuple[str, ...] = ()
    """A replay's arrivals whose step the turn never reached: appended to their queues, pending
    for a later turn (SPEC §11.2)."""

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
    for event in events:
        match parse_event(event):
            case TurnStart(turn=turn):
                open_turn, stepped, claimed = turn, False, False
                turns.append(turn)
            case StepStart():
                stepped = True
            case Splice(is_cancel=True, inserted=()):
                dropped = True
            case Splice(is_claim=True) if open_turn is not None:
                claimed = True
            case AssistantMessageEvent(text=body) if body.strip():
                text = body
            case TurnEnd(turn=turn, reason=reason, kind=kind):
                if stepped or (claimed and kind != "completed"):
                    end = {"turn": turn, "reason": reason}
                    dropped = False
                open_turn = None
    return Run(tuple(turns), end, text, dropped)
