"""When streamed ``assistant/chunk``s are committed: at most ``PERIOD`` seconds after the last commit
(SPEC §6.2), by a timer on the agent's loop, or with the driver's next write."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

PERIOD = 0.1
"""Seconds a staged chunk may wait for its commit."""


class ChunkTimer:
    """The one pending timed flush of a driver's staged chunks, and when they were last written."""

    def __init__(self, loop: asyncio.AbstractEventLoop, flush: Callable[[], None]) -> None:
        self.loop = loop
        self._flush = flush
        self._timer: asyncio.TimerHandle | None = None
        self._last = 0.0

    def staged(self) -> None:
        """A chunk was staged: flush now when the period has passed, else once it has."""
        if self.loop.time() - self._last >= PERIOD:
            self._flush()
        elif self._timer is None:
            self._timer = self.loop.call_at(self._last + PERIOD, self._timed)

    def _timed(self) -> None:
        self._timer = None
        self._flush()

    def written(self) -> None:
        """A commit is writing everything staged: the pending timed flush is not needed."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._last = self.loop.time()
