"""nbagent: an LLM agent session living in a Jupyter kernel, logged to SQLite."""

from typing import Any

from nbagent.core.agent import Agent, LiveNotice
from nbagent.core.events import Event
from nbagent.core.hooks import Enter, PreStep, Reject, RequestFailure, Retry, SessionStart, TurnStopping
from nbagent.core.messages import AssistantMessage, Message, UserMessage
from nbagent.core.retry import RetryPolicy
from nbagent.core.runs import Run
from nbagent.core.tools import Tool, ToolResult, tool
from nbagent.errors import (
    NbagentError,
    ReentrantDeliveryError,
    SessionClosedError,
    SessionCorruptError,
    SessionFileError,
    SessionLockedError,
    SessionNotFoundError,
    SessionWriteError,
)
from nbagent.session import open_session, resume_session
from nbagent.store.base import SessionRow
from nbagent.store.follow import follow_events
from nbagent.store.reading import list_sessions, read_events

__all__ = [
    "Agent",
    "AssistantMessage",
    "Enter",
    "Event",
    "LiveNotice",
    "Message",
    "NbagentError",
    "PreStep",
    "ReentrantDeliveryError",
    "Reject",
    "RequestFailure",
    "Retry",
    "RetryPolicy",
    "Run",
    "SessionClosedError",
    "SessionCorruptError",
    "SessionFileError",
    "SessionLockedError",
    "SessionNotFoundError",
    "SessionRow",
    "SessionStart",
    "SessionWriteError",
    "Tool",
    "ToolResult",
    "TurnStopping",
    "UserMessage",
    "follow_events",
    "list_sessions",
    "open_session",
    "read_events",
    "resume_session",
    "tool",
]
__version__ = "0.1.0"


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext nbagent``: register the magics (imports the notebook layer only now)."""
    from nbagent.notebook import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext nbagent``: remove the magics and hooks again."""
    from nbagent.notebook import unload_ipython_extension as _unload

    _unload(ipython)
