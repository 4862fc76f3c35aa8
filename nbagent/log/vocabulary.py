"""The closed vocabularies of the log: queue names, reasons, outcomes, failure codes (SPEC §4), and
the one :class:`Failure`.

Written as ``Literal``s and ``TypedDict``s, so what the loop writes is checked where it is written
while the stored JSON stays plain strings and dicts. A failure is the one value with behaviour (its
text is scrubbed of secrets when it is made): a frozen class, stored as its :meth:`Failure.to_json`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypedDict

from nbagent._json import storable
from nbagent.redaction import scrub

Target = Literal["next-turn", "next-step"]
"""The two inbox queues."""
NEXT_TURN: Final = "next-turn"
NEXT_STEP: Final = "next-step"

SpliceOutcome = Literal["canceled", "moved"]
"""Why pending messages left the inbox other than by a claim."""

TurnEndKind = Literal["completed", "max-tokens", "blocked", "aborted", "error", "interrupted"]
"""``turn/end.reason.kind`` (SPEC §4)."""

HeaderReason = Literal["initial", "resume", "change"]
"""Why a ``request/header`` was written."""

ApprovalOutcome = Literal["allowed-once", "rejected", "cancelled", "unavailable"]
"""What became of a tool call that needed approval (``approval/decided.outcome``, SPEC §4)."""

ApprovalScope = Literal["session"]
"""``approval/decided.scope``: an ``allowed-once`` that came from an allowance for the rest of the
session (absent for a one-off decision)."""

ApproverAnswer = Literal["allowed-once", "allowed-session", "rejected", "cancelled", "unavailable"]
"""What an approver returns: an outcome, or ``allowed-session`` (recorded as ``allowed-once`` with
``scope: "session"``)."""

FailureCode = Literal[
    "RATE_LIMIT",
    "SERVER",
    "TIMEOUT",
    "TRANSPORT",
    "AUTH",
    "BAD_REQUEST",
    "CONTEXT_OVERFLOW",
    "UNKNOWN",
]
"""Failure codes of a model request; the built-in retry policy retries the first four."""

LoopFailureCode = Literal["STEP_LIMIT", "UNKNOWN", "TRANSPORT"]
"""The failure codes the loop itself writes (a model's failures carry the provider's codes:
:data:`FailureCode`)."""

ToolErrorCode = Literal[
    "TOOL_NOT_FOUND",
    "INVALID_ARGUMENTS",
    "DENIED",
    "ABORTED",
    "ABORTED_BEFORE_DISPATCH",
    "TOOL_ERROR",
    "INVALID_RESULT",
    "TOOL_NOT_STARTED",
    "TOOL_OUTCOME_UNKNOWN",
]
"""The codes of the error results the tool batch and crash repair write (a tool's own
``ToolResult(code=...)`` may add others)."""


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a model request or a turn failed: what a model's ``Finish`` chunk or ``ModelError``
    carries, what the loop makes of its own failures, what a ``request_error`` hook is given, and
    what ``llm/retry.failure`` and ``turn/end.reason.error`` hold. Stored as
    ``{"message", "code", "status"?, "retry_after_ms"?}``."""

    message: str
    """What went wrong; secrets in it (configured API keys, ``sk-…``/``Bearer …`` tokens) are scrubbed
    when the failure is made, so no log, event, transcript or run error ever holds them."""
    code: str = "UNKNOWN"
    status: int | None = None
    retry_after_ms: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", scrub(self.message))

    def to_json(self) -> dict[str, Any]:
        """The stored form: ``message`` and ``code``, then ``status`` and ``retry_after_ms`` when set."""
        out: dict[str, Any] = {"message": self.message, "code": self.code}
        if self.status is not None:
            out["status"] = self.status
        if self.retry_after_ms is not None:
            out["retry_after_ms"] = self.retry_after_ms
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Failure:
        """The failure a log stores, read as it is stored: its text is not scrubbed again, an absent
        ``message`` or ``code`` reads as ``""`` and any other value is kept for the views to word."""
        failure = object.__new__(cls)
        _set(failure, "message", data.get("message", ""))
        _set(failure, "code", data.get("code", ""))
        _set(failure, "status", data.get("status"))
        _set(failure, "retry_after_ms", data.get("retry_after_ms"))
        return failure

    def storable(self) -> Failure:
        """This failure as the log stores it: every lone surrogate in its text replaced (SPEC §2.1)."""
        return Failure.from_json(storable(self.to_json()))


_set = object.__setattr__


class ToolError(TypedDict):
    """The ``error`` of a failed ``tool/result``: the exception's name and a code."""

    name: str
    code: str


class TokenUsage(TypedDict, total=False):
    """Token usage as the provider reported it (``input_tokens`` includes the cached ones)."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
