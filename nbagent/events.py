"""The durable event envelope and the vocabulary of core event types (SPEC §4)."""

from __future__ import annotations

from typing import Any, Final, NamedTuple


class Event(NamedTuple):
    """One durable fact of a session log; ``data`` is plain JSON as stored."""

    seq: int
    time: int
    type: str
    data: Any


INBOX_SPLICED: Final = "agent/inbox/spliced"
TURN_START: Final = "turn/start"
TURN_END: Final = "turn/end"
STEP_START: Final = "step/start"
STEP_END: Final = "step/end"
USER_MESSAGE: Final = "user/message"
REQUEST_HEADER: Final = "request/header"
ASSISTANT_CHUNK: Final = "assistant/chunk"
ASSISTANT_MESSAGE: Final = "assistant/message"
TOOL_CALL: Final = "tool/call"
TOOL_RESULT: Final = "tool/result"
LLM_RETRY: Final = "llm/retry"
APPROVAL_ASKED: Final = "approval/asked"
APPROVAL_DECIDED: Final = "approval/decided"

MESSAGE_EVENTS: Final = frozenset({USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT})
"""The event types whose ``message`` is model-visible (SPEC §4, "model-visible means logged")."""

NEXT_TURN: Final = "next-turn"
NEXT_STEP: Final = "next-step"
