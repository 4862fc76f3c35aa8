"""Waiting synchronously inside the kernel's running loop (``--wait``, ``%agent wait``/``close``).

A magic runs inside a callback of the kernel's asyncio loop, so it cannot ``await``; these helpers
run the loop re-entrantly with nest-asyncio, applied on first use only. While waiting, a kernel
interrupt (SIGINT) cancels the turn through the loop instead of raising in the middle of its work.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def complete_now(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that is known not to suspend (for example closing an idle agent) to its end
    without touching the loop; raise ``RuntimeError`` if it does suspend."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("the coroutine suspended; wait for it with block_on()")


def block_on(awaitable: Awaitable[T], loop: asyncio.AbstractEventLoop) -> T:
    """Run ``loop`` until ``awaitable`` is done and return its result."""
    import nest_asyncio

    nest_asyncio.apply(loop)
    return loop.run_until_complete(asyncio.ensure_future(awaitable, loop=loop))


def block_interruptibly(
    awaitable: Awaitable[T], loop: asyncio.AbstractEventLoop, on_interrupt: Callable[[], None]
) -> tuple[T, bool]:
    """Like :func:`block_on`, but a first SIGINT calls ``on_interrupt`` on the loop (which should make
    ``awaitable`` finish soon) and the wait goes on; a second SIGINT raises ``KeyboardInterrupt``.

    Returns the result and whether an interrupt arrived.
    """
    interrupted = False

    def handler(signum: int, frame: Any) -> None:
        nonlocal interrupted
        if interrupted:
            raise KeyboardInterrupt
        interrupted = True
        loop.call_soon_threadsafe(on_interrupt)

    if threading.current_thread() is not threading.main_thread():
        return block_on(awaitable, loop), False
    previous = signal.signal(signal.SIGINT, handler)
    try:
        return block_on(awaitable, loop), interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
