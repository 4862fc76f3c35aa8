"""The one coalescer of live views: collect items from live notices, hand them over in batches."""

from __future__ import annotations

import asyncio
import contextvars
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

    With ``fresh_context`` each timed flush runs in an empty ``contextvars.Context``: a kernel then
    stamps what the flush displays with the request it handles now, not with the one that happened
    to be current when the first item was pushed.
    """

    def __init__(
        self, flush: Callable[[list[T]], None], delay: float = 0.04, *, fresh_context: bool = False
    ) -> None:
        self._flush = flush
        self._delay = delay
        self._fresh = fresh_context
        self._items: list[T] = []
        self._handle: asyncio.TimerHandle | None = None
        self._lock = threading.RLock()

    def push(self, item: T, *, hold: bool = False, soon: bool = False) -> None:
        """Buffer ``item``; flush within ``delay`` seconds, at the loop's next turn with ``soon``, or
        only with a later push or :meth:`flush_now` with ``hold``."""
        with self._lock:
            self._items.append(item)
            if hold:
                return
            if soon and self._handle is not None:
                self._handle.cancel()
                self._handle = None
            if self._handle is not None:
                return
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                context = contextvars.Context() if self._fresh else None
                self._handle = loop.call_later(0 if soon else self._delay, self.flush_now, context=context)
                return
        self.flush_now()

    def flush_now(self, *, always: bool = False) -> None:
        """Hand over everything buffered (also used before a snapshot is taken); with ``always``
        the flush runs even when nothing is buffered."""
        with self._lock:
            if self._handle is not None:
                self._handle.cancel()
                self._handle = None
            items, self._items = self._items, []
            if items or always:
                self._flush(items)

    def cancel(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.cancel()
                self._handle = None
            self._items = []
