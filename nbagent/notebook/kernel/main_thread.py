"""Work for the kernel's main thread, handed over from the agent loop (SPEC §9.0).

The agents of a notebook run on the agent loop, a background thread
(:mod:`nbagent.notebook.kernel.agent_loop`). Anything that touches the user's namespace on the agent's
behalf (reading a variable, running code the user approved, IPython's history) must run on the
kernel's main thread instead, where the user's cells run. :class:`MainThread` is that hand-over::

    main = current_kernel_session().main_thread          # or KernelSession.main_thread

    # on the agent loop (a tool body, a hook):
    value = await main.call(lambda: shell.user_ns["df"].shape)

    # from any thread:
    future = main.submit(lambda: shell.user_ns["df"].shape)   # concurrent.futures.Future
    future.result(timeout=5)                                   # never on the main thread itself

A submitted callable runs on the main thread, one at a time and in submission order:

- when the main thread is free: a callback on the kernel's own loop runs it between two cells (and
  while an ``async`` cell awaits), never in the middle of one;
- while a ``--wait`` cell (or ``%agent wait``) blocks the main thread: :meth:`MainThread.wait` serves
  the queue while it waits, so a tool that needs the main thread never deadlocks against the cell
  waiting for that tool's turn;
- while a cell computes (``time.sleep(10)``), it waits for that cell to end.

:meth:`MainThread.wait` also serves the kernel's widget messages (``comm_msg``: an inbox remove
button, an approval click) while it blocks, through :mod:`nbagent.notebook.kernel.shell_pump`; every other
request the kernel receives meanwhile (the cells Run All queued) stays queued, in order, for after
the wait. A first SIGINT (■ in the notebook) during a wait calls the wait's ``on_interrupt`` (which
cancels the turn) and keeps waiting for the run to end; a second one raises ``KeyboardInterrupt``.

Outside a kernel (a plain IPython shell, a test) there is no loop to schedule on: call
:meth:`MainThread.run_pending` from the main thread to serve the queue, or wait with
:meth:`MainThread.wait`, which serves it too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import select
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from nbagent.notebook.kernel.shell_pump import ShellPump

T = TypeVar("T")


class MainThread:
    """Runs callables on the kernel's main thread for code on other threads (the agent loop)."""

    def __init__(
        self, kernel_loop: asyncio.AbstractEventLoop | None = None, pump: ShellPump | None = None
    ) -> None:
        """``kernel_loop``: the loop the main thread runs when no cell runs (ipykernel's), used to serve
        the queue when the thread is free; ``pump``: the kernel's shell messages, served during waits."""
        self.thread = threading.main_thread()
        self.kernel_loop = kernel_loop
        self.pump = pump
        self._jobs: deque[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] = deque()
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._waiting = 0

    # -- from any thread ---------------------------------------------------------------------------

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Queue ``fn`` for the main thread; thread-safe. Its result (or exception) lands in the future.

        Cancelling the future before ``fn`` started keeps it from running.
        """
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        with self._lock:
            self._jobs.append((fn, future))
        self._wake()
        loop = self.kernel_loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the kernel's loop has stopped (shutdown)
                loop.call_soon_threadsafe(self.run_pending)
        return future

    async def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the main thread and return its result; await it from the agent loop (or any
        loop other than the main thread's). Cancelling the await cancels ``fn`` if it has not started."""
        if threading.current_thread() is self.thread:
            return fn()  # already there (a script driving its own loop on the main thread)
        return await asyncio.wrap_future(self.submit(fn))

    @property
    def waiting(self) -> bool:
        """True while :meth:`wait` blocks the main thread."""
        return self._waiting > 0

    # -- on the main thread -----------------------------------------------------------------------

    def run_pending(self) -> int:
        """Run every queued callable, in order; returns how many ran. Main thread only."""
        ran = 0
        while True:
            with self._lock:
                if not self._jobs:
                    return ran
                fn, future = self._jobs.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            ran += 1
            try:
                result = fn()
            except BaseException as exc:
                future.set_exception(exc)
                if not isinstance(exc, Exception):
                    raise  # KeyboardInterrupt, SystemExit: the main thread's to handle
            else:
                future.set_result(result)

    def wait(
        self,
        future: concurrent.futures.Future[T] | Callable[[], concurrent.futures.Future[T]],
        *,
        on_interrupt: Callable[[], None] | None = None,
        timeout: float | None = None,
    ) -> tuple[T, bool]:
        """Block the main thread until ``future`` is done, serving queued callables and widget
        messages meanwhile; return its result and whether a SIGINT arrived.

        ``future`` may be a function that starts the work and returns its future: it is called once
        the SIGINT handler is in place, so an interrupt can never fall between the start and the wait.

        With ``on_interrupt``, the first SIGINT calls it (it should make ``future`` finish soon, for
        example by cancelling the turn) and the wait goes on; a second SIGINT, or any SIGINT without
        ``on_interrupt``, raises ``KeyboardInterrupt``. After ``timeout`` seconds without the future
        done, raises ``concurrent.futures.TimeoutError`` (the future goes on). Never call this from the
        agent loop's thread.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        interrupted = False

        def handler(signum: int, frame: Any) -> None:
            nonlocal interrupted
            if interrupted or on_interrupt is None:
                raise KeyboardInterrupt
            interrupted = True
            on_interrupt()
            self._wake()

        self._waiting += 1
        try:
            with self._sigint(handler):
                if callable(future):
                    future = future()
                future.add_done_callback(lambda _f: self._wake())
                while True:
                    self.run_pending()
                    if future.done():
                        break
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise concurrent.futures.TimeoutError
                    self._block(remaining)
        finally:
            self._waiting -= 1
        return future.result(), interrupted

    # -- internals --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _sigint(self, handler: Callable[[int, Any], None]) -> Iterator[None]:
        if threading.current_thread() is not self.thread:
            yield
            return
        previous = signal.signal(signal.SIGINT, handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):  # full (already awake) or closed
            self._wake_w.send(b"\0")

    def _drain_wakes(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            while self._wake_r.recv(4096):
                pass

    def _block(self, timeout: float | None) -> None:
        """Sleep until a wake (a job, the future done, a signal), a shell message or ``timeout``
        seconds; serve the shell messages."""
        pump = self.pump
        if pump is not None and pump.available():
            pump.wait_and_serve(self._wake_r.fileno(), timeout)
        else:
            select.select([self._wake_r], [], [], timeout)
        self._drain_wakes()
