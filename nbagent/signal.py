"""One cancellation signal per turn: a cooperative flag with an awaitable, first cause wins."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable


class CancelSignal:
    """The turn's cancellation signal (``signal.cancelled``, ``await signal.wait()``)."""

    __slots__ = ("_callbacks", "_event", "_lock", "_loop", "cause", "sealed")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._event: asyncio.Event | None = None
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], object]] = []
        self.cause: str | None = None
        self.sealed = False
        """Set once the turn has ended: a later cancel cannot change it."""

    @property
    def cancelled(self) -> bool:
        return self.cause is not None

    def cancel(self, cause: str) -> bool:
        """Cancel with ``cause`` unless already cancelled or sealed; ``True`` if this call won."""
        with self._lock:
            if self.cause is not None or self.sealed:
                return False
            self.cause = cause
        if self._event is not None:
            self._event.set()
        for callback in list(self._callbacks):
            callback()
        return True

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
