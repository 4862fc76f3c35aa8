"""Outcomes in words: how a turn ended, what an approval decided (written once, painted everywhere)."""

from __future__ import annotations

from dataclasses import dataclass

from nbagent._json import FrozenDict
from nbagent.log.events import TurnEnd
from nbagent.log.vocabulary import Failure
from nbagent.views.text import clip, first_line

OUTCOME_MAX = 160

STATUS_TEXT: dict[str, str] = {"max-tokens": "token limit", "aborted": "canceled", "error": "failed"}
"""The status pill's word where it is not the ``turn/end.reason.kind`` itself (``running``,
``completed``, ``blocked``, ``interrupted`` and unknown kinds show as they are)."""

_NO_FAILURE = Failure.from_json(FrozenDict())
"""An ``error`` turn that stored no ``error`` (worded as one without a message)."""

CAUSES: dict[str, str] = {"user": "canceled by you", "close": "canceled: the session was closed"}

APPROVALS: dict[str, str] = {
    "allowed-once": "approved once",
    "allowed-session": "approved for this session",
    "rejected": "denied",
    "cancelled": "canceled with the turn",
    "unavailable": "no one was there to approve it",
}


@dataclass(frozen=True, slots=True)
class TurnOutcome:
    status_text: str
    """The pill's word: ``completed``, ``failed``, ``canceled``…"""
    line: str
    """One line for the turn's head: ``failed: AUTH: no API key for openai``."""
    why: str | None
    """The whole reason a turn did not complete (shown when it is opened); ``None`` if it completed."""


def turn_outcome(ev: TurnEnd) -> TurnOutcome:
    """How turn ``ev.turn`` ended, in the words every view shows."""
    kind = ev.kind
    status = STATUS_TEXT.get(kind, kind)
    if kind == "completed":
        return TurnOutcome(status, "completed", None)
    if kind == "error":
        err = ev.error or _NO_FAILURE
        code = str(err.code or "UNKNOWN")
        message = str(err.message or "").strip()
        http = f" (HTTP {err.status})" if err.status else ""
        why = f"{code}{http}: {message}" if message else f"{code}{http}: the turn failed without a message"
        return TurnOutcome(status, clip(f"failed: {first_line(why, OUTCOME_MAX)}", OUTCOME_MAX), why)
    if kind == "aborted":
        cause = ev.cause
        line = CAUSES.get(cause or "", f"canceled ({cause})" if cause else "canceled")
        return TurnOutcome(status, line, line)
    if kind == "blocked":
        why = "a pre-step listener rejected the step: the claimed messages were not sent to the model"
        return TurnOutcome(status, "blocked before the model ran", why)
    if kind == "max-tokens":
        why = "the answer reached the model's output token limit; tool calls in it were dropped"
        return TurnOutcome(status, "stopped at the token limit", why)
    if kind == "interrupted":
        why = "the kernel stopped during this turn; the log was repaired when the session was resumed"
        return TurnOutcome(status, "interrupted: the kernel stopped", why)
    return TurnOutcome(status, kind, kind)


def approval_text(tool: str | None, outcome: str | None) -> str:
    """``run_code is waiting for your approval``, then ``run_code: approved once``."""
    if outcome is None:
        return f"{tool} is waiting for your approval"
    return f"{tool}: {APPROVALS.get(outcome, outcome)}"
