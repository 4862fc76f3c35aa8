"""nbagent: an LLM agent session living in a Jupyter kernel, logged to SQLite."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbagent.agent import Agent, LiveNotice
    from nbagent.core.hooks import Enter, PreStep, Reject, RequestFailure, Retry, SessionStart, TurnStopping
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
    from nbagent.forks.attribution import attribution
    from nbagent.forks.sessions import diff, fork_session
    from nbagent.log.events import Event
    from nbagent.log.messages import AssistantMessage, Message, UserMessage
    from nbagent.session import open_session, resume_session
    from nbagent.store.base import SessionRow
    from nbagent.store.follow import follow_events
    from nbagent.store.reading import list_sessions, read_events

# The public names, imported on first use (PEP 562): ``nbagent --version``, ``%load_ext nbagent``
# and a tool that only reads a log do not pay for the agent runtime they do not use.
_HOMES = {
    "nbagent.agent": ("Agent", "LiveNotice"),
    "nbagent.log.events": ("Event",),
    "nbagent.core.hooks": (
        "Enter",
        "PreStep",
        "Reject",
        "RequestFailure",
        "Retry",
        "SessionStart",
        "TurnStopping",
    ),
    "nbagent.log.messages": ("AssistantMessage", "Message", "UserMessage"),
    "nbagent.core.retry": ("RetryPolicy",),
    "nbagent.core.runs": ("Run",),
    "nbagent.core.tools": ("Tool", "ToolResult", "tool"),
    "nbagent.errors": (
        "NbagentError",
        "ReentrantDeliveryError",
        "SessionClosedError",
        "SessionCorruptError",
        "SessionFileError",
        "SessionLockedError",
        "SessionNotFoundError",
        "SessionWriteError",
    ),
    "nbagent.forks.attribution": ("attribution",),
    "nbagent.forks.sessions": ("diff", "fork_session"),
    "nbagent.session": ("open_session", "resume_session"),
    "nbagent.store.base": ("SessionRow",),
    "nbagent.store.follow": ("follow_events",),
    "nbagent.store.reading": ("list_sessions", "read_events"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

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
    "attribution",
    "diff",
    "follow_events",
    "fork_session",
    "list_sessions",
    "open_session",
    "read_events",
    "resume_session",
    "tool",
]


def _checkout_version() -> str:
    """The version written in labextension/package.json (the one place it is written), for a
    checkout on sys.path that no build has written ``nbagent/_version.py`` into."""
    import json
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "labextension" / "package.json"
    return str(json.loads(package.read_text(encoding="utf-8"))["version"])


try:  # written by the build (hatch-nodejs-version reads labextension/package.json)
    from nbagent._version import __version__
except ImportError:
    __version__ = _checkout_version()


def __getattr__(name: str) -> Any:
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'nbagent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext nbagent``: register the magics (imports the notebook layer only now)."""
    from nbagent.notebook import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext nbagent``: remove the magics and hooks again."""
    from nbagent.notebook import unload_ipython_extension as _unload

    _unload(ipython)
