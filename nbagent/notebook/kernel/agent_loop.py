"""The agent loop: one asyncio loop in a daemon thread of the kernel process (SPEC §9.0).

Every agent the notebook layer opens lives on this loop: its turns, tools, model streams and the
renders of the live cell views run there, whatever the kernel's main thread is doing (a cell that
computes for minutes, a ``--wait`` that blocks, Run All's queue of cells). The kernel's own loop is
never re-entered and never nested.

The main thread talks to it in two ways only:

- deliveries (``agent.followup``/``steer``/``inject``, ``cancel``) straight from the main thread,
  which the agent makes thread-safe (SPEC §3.2);
- :meth:`AgentLoop.submit` for coroutines (``agent.run``, ``agent.close``, opening a session), whose
  ``concurrent.futures.Future`` the main thread waits on with
  :meth:`nbagent.notebook.kernel.main_thread.MainThread.wait`, which keeps serving the main thread's work.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

THREAD_NAME = "nbagent-agent-loop"


class AgentLoop:
    """An asyncio loop running forever in its own daemon thread.

    The thread runs in an empty ``contextvars.Context``: nothing of the cell that happened to start it
    (ipykernel's parent message, for one) leaks into the agents' work.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.loop.call_soon(ready.set)
            self.loop.run_forever()

        self.thread = threading.Thread(
            target=lambda: contextvars.Context().run(run), name=THREAD_NAME, daemon=True
        )
        self.thread.start()
        ready.wait()

    @property
    def running(self) -> bool:
        return self.thread.is_alive() and not self.loop.is_closed()

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self.thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run ``coro`` as a task on the agent loop; thread-safe.

        The task starts in an empty ``contextvars.Context`` (``asyncio.run_coroutine_threadsafe``
        would give it the caller's, with ipykernel's parent message of the running cell). Cancelling
        the returned future cancels the task.
        """
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def start() -> None:
            if future.cancelled():
                coro.close()
                return
            task = self.loop.create_task(coro)

            def copy(done: asyncio.Task[T]) -> None:
                if done.cancelled():
                    future.cancel()
                if not future.set_running_or_notify_cancel():
                    return
                error = done.exception()
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(done.result())

            task.add_done_callback(copy)
            future.add_done_callback(
                lambda f: self.loop.call_soon_threadsafe(task.cancel) if f.cancelled() else None
            )

        try:
            self.loop.call_soon_threadsafe(start, context=contextvars.Context())
        except RuntimeError:  # the loop is closed
            coro.close()
            raise
        return future

    def call(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Run the plain callable ``fn`` on the loop thread (for example opening a session, which
        binds the agent to the running loop); thread-safe."""

        async def run() -> T:
            return fn()

        return self.submit(run())

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and join its thread (tests and interpreter exit; agents should be closed first)."""
        if not self.running:
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)


_shared: AgentLoop | None = None
_shared_lock = threading.Lock()


def agent_loop() -> AgentLoop:
    """The process's agent loop, started on first use."""
    global _shared
    with _shared_lock:
        if _shared is None or not _shared.running:
            _shared = AgentLoop()
        return _shared
