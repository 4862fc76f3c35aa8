"""The closed vocabularies of the log: queue names, reasons, outcomes, failure codes (SPEC §4).

Written as ``Literal``s and ``TypedDict``s, so what the loop writes is checked where it is written
while the stored JSON stays plain strings and dicts.
"""

from __future__ import annotations

from typing import Final, Literal, TypedDict

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

LoopFailureCode = Literal["STEP_LIMIT", "UNKNOWN", "TRANSPORT"]
"""The failure codes the loop itself writes (a model's failures carry the provider's codes:
``RATE_LIMIT``, ``SERVER``, ``TIMEOUT``, ``AUTH``, ``BAD_REQUEST``, ``CONTEXT_OVERFLOW``…)."""

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


class Failure(TypedDict, total=False):
    """Why a request or a turn failed: ``{"message", "code", "status"?, "retry_after_ms"?}``."""

    message: str
    code: str
    status: int
    retry_after_ms: int


class ToolError(TypedDict):
    """The ``error`` of a failed ``tool/result``: the exception's name and a code."""

    name: str
    code: str


class TokenUsage(TypedDict, total=False):
    """Token usage as the provider reported it (``input_tokens`` includes the cached ones)."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
