"""The one coalescer of live views: collect items from live notices, hand them over in batches."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Coalescer(Generic[T]):
    """Buffers pushed items and calls ``flush(items)`` at most once per ``delay`` seconds.

    The timer runs on the loop that delivers the notices (the agent's loop), so a streamed answer
    of hundreds of chunks becomes a handful of front-end messages. Without a running loop the
    items are flushed at once.
    """

    def __init__(self, flush: Callable[[list[T]], None], delay: float = 0.04) -> None:
        self._flush = flush
        self._delay = delay
        self._items: list[T] = []
        self._handle: asyncio.TimerHandle | None = None

    def push(self, item: T) -> None:
        self._items.append(item)
        if self._handle is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush_now()
            return
        self._handle = loop.call_later(self._delay, self.flush_now)

    def flush_now(self) -> None:
        """Hand over everything buffered (also used before a snapshot is taken)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        items, self._items = self._items, []
        if items:
            self._flush(items)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._items = []
