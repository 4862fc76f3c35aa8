"""What a turn driver is given: its configuration, its open turn, a resumed start (its life is
``lifecycle.py``).

Kept apart from ``driver.py`` so the agent, the loop and the tool batch can name these types
without importing the driver's machinery.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from nbagent.core.hooks import Hooks
from nbagent.core.inbox import InboxState
from nbagent.core.ports import WindowLookup
from nbagent.core.projections import Prefix
from nbagent.core.retry import RetryPolicy
from nbagent.core.signal import CancelSignal
from nbagent.log.events import Record
from nbagent.log.messages import UserMessage


@dataclass(slots=True)
class OpenTurn:
    number: int
    claimed: tuple[UserMessage, ...]
    signal: CancelSignal


Drive = Callable[[Any, "OpenTurn | None"], Coroutine[Any, Any, None]]
"""The driver task's body, given the ``Driver`` and its first turn (``nbagent.core.loop.drive``):
runs turns until there is no waking work. Passed in, so the driver never imports the loop."""


@dataclass(frozen=True, slots=True)
class DriverConfig:
    """What a driver is given once, by the agent that fronts it."""

    session_id: str
    max_steps: int
    """A turn that would start step ``max_steps + 1`` ends ``error`` (``STEP_LIMIT``)."""
    cancel_grace: float
    """Seconds a cancelled turn waits for a started tool or request before abandoning it."""
    retry_policy: RetryPolicy
    hooks: Hooks
    """The agent's hooks; ``hooks.agent`` is what their payloads carry as ``agent``."""
    drive: Drive
    window_lookup: WindowLookup | None = None
    """The context window of a model a request names (the price table, from the session layer);
    ``None``: only a model's own ``context_window`` is known."""


@dataclass(frozen=True, slots=True)
class Resumed:
    """What a resumed session starts from (read cheaply; the rest of the log is read on first use)."""

    next_seq: int
    last_time: int
    inbox: InboxState
    last_turn: int
    last_header: tuple[str, str | None, tuple[Any, ...]] | None
    """The settings of the last ``request/header`` (:attr:`RequestHeader.settings`)."""
    prefix: Callable[[], Prefix]
    repair: list[Record]
