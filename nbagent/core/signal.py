"""One cancellation signal per turn: a cooperative flag with an awaitable, first cause wins."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any


class CancelSignal:
    """The turn's cancellation signal (``signal.cancelled``, ``await signal.wait()``)."""

    __slots__ = ("_callbacks", "_event", "_lock", "_loop", "cancelled_at", "cause", "sealed")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._event: asyncio.Event | None = None
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], object]] = []
        self.cause: str | None = None
        self.cancelled_at: float | None = None
        """``time.monotonic()`` when the signal was cancelled."""
        self.sealed = False
        """Set once the turn has ended: a later cancel cannot change it."""

    @property
    def cancelled(self) -> bool:
        return self.cause is not None

    def cancel(self, cause: str) -> bool:
        """Cancel with ``cause`` unless already cancelled or sealed; ``True`` if this call won.

        Call on the loop's thread; another thread uses :meth:`mark` and hands :meth:`fire` over.
        """
        if not self.mark(cause):
            return False
        self.fire()
        return True

    def mark(self, cause: str) -> bool:
        """Set the cause (any thread): the loop's next check sees it; ``True`` if this call won."""
        with self._lock:
            if self.cause is not None or self.sealed:
                return False
            self.cause = cause
            self.cancelled_at = time.monotonic()
        return True

    def fire(self) -> None:
        """Wake waiters and run the cancel callbacks (on the loop's thread, after :meth:`mark`)."""
        if self._event is not None:
            self._event.set()
        for callback in list(self._callbacks):
            callback()

    def seal(self) -> None:
        """The turn has ended: later cancels cannot change it."""
        with self._lock:
            self.sealed = True

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call ``callback`` (on the loop thread) when cancelled; returns a function removing it."""
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove

    async def wait(self) -> None:
        """Resolve once the signal is cancelled."""
        if self._event is None:
            self._event = asyncio.Event()
            if self.cause is not None:
                self._event.set()
        await self._event.wait()

    def __repr__(self) -> str:
        return f"CancelSignal(cancelled={self.cancelled}, cause={self.cause!r})"


async def settle(task: asyncio.Future[Any], signal: CancelSignal, grace: float) -> bool:
    """Wait for ``task``; once ``signal`` is cancelled, at most ``grace`` seconds after the cancel.

    Returns whether ``task`` finished. Work that ignores its cancellation is abandoned after the
    grace (SPEC §5.6), so a cancelled turn always converges. If the waiting task itself is
    cancelled, so is ``task``, which gets the same grace to finish.
    """
    try:
        if not signal.cancelled and not task.done():
            woke: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def wake(_: object = None) -> None:
                if not woke.done():
                    woke.set_result(None)

            task.add_done_callback(wake)
            remove = signal.on_cancel(wake)
            try:
                await woke
            finally:
                remove()
                task.remove_done_callback(wake)
        if not task.done():
            since = time.monotonic() - (signal.cancelled_at or time.monotonic())
            await asyncio.wait({task}, timeout=max(0.0, grace - since))
    except asyncio.CancelledError:
        if not task.done():
            task.cancel()
            await asyncio.wait({task}, timeout=grace)
        raise
    if not task.done():
        task.add_done_callback(_ignore_result)
        return False
    return True


def _ignore_result(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: an abandoned task's late failure is nobody's to report
