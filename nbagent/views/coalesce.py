"""The one coalescer of live views: collect items from live notices, hand them over in batches."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Coalescer(Generic[T]):
    """Buffers pushed items and calls ``flush(items)`` at most once per ``delay`` seconds.

    The timer runs on the loop that delivers the notices (the agent's loop), so a streamed answer
    of hundreds of chunks becomes a handful of front-end messages. Without a running loop the
    items are flushed at once. Pushes and flushes may come from several threads (the agent's loop
    and the kernel's main thread, which flushes before a snapshot): batches are handed over one at
    a time, in the order they were pushed.
    """

    def __init__(self, flush: Callable[[list[T]], None], delay: float = 0.04) -> None:
        self._flush = flush
        self._delay = delay
        self._items: list[T] = []
        self._handle: asyncio.TimerHandle | None = None
        self._lock = threading.RLock()

    def push(self, item: T) -> None:
        with self._lock:
            self._items.append(item)
            if self._handle is not None:
                return
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                self._handle = loop.call_later(self._delay, self.flush_now)
                return
        self.flush_now()

    def flush_now(self) -> None:
        """Hand over everything buffered (also used before a snapshot is taken)."""
        with self._lock:
            if self._handle is not None:
                self._handle.cancel()
                self._handle = None
            items, self._items = self._items, []
            if items:
                self._flush(items)

    def cancel(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.cancel()
                self._handle = None
            self._items = []
