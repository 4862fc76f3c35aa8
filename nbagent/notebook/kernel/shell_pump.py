"""Serving the kernel's widget messages while a cell blocks the main thread (ipykernel 6 and 7).

While a cell runs, ipykernel reads no new shell requests: they wait in a ZeroMQ socket until the cell
ends. A ``--wait`` cell must still see the clicks of its own turn (an approval, the inbox remove
button): those arrive as ``comm_msg`` requests on the same socket as the cells queued by Run All.

A :class:`ShellPump` reads that socket from the main thread while the wait blocks it. Widget messages
(``comm_open``, ``comm_msg``, ``comm_close``) go to the kernel's comm handlers at once; every other
request is handed back to the kernel's own queue, in arrival order and behind everything the kernel
had already read, so Run All's cells run after the wait exactly as queued.

Where the main thread's shell requests arrive, and how they are queued, differs by version:

- ipykernel 7 reads the shell socket on its shell-channel thread and forwards the main shell's
  requests to the main thread over an in-process socket pair; the main thread serves them with
  ``Kernel.shell_main``, one at a time under an asyncio lock that is fair (FIFO).
- ipykernel 6 reads the shell socket on the main thread and queues each request with
  ``Kernel.schedule_dispatch`` on a FIFO queue that one task serves.

Both are driven through those public methods; a kernel that has neither (an in-process shell, another
kernel) gets no pump, and a wait then serves only the main-thread queue.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

log = logging.getLogger("nbagent.notebook")

COMM_TYPES = frozenset({"comm_open", "comm_msg", "comm_close"})


class ShellPump:
    """Reads one ZeroMQ socket of shell requests on the main thread during a wait (see module doc)."""

    def __init__(
        self,
        kernel: Any,
        socket: Any,
        reply_stream: Any,
        requeue: Callable[[list[Any]], None],
        version: str,
    ) -> None:
        self.kernel = kernel
        self.socket = socket
        self.reply_stream = reply_stream
        self._requeue = requeue
        self.version = version
        self.served = 0
        """Widget messages handled during waits (for tests and diagnostics)."""
        self.requeued = 0

    @classmethod
    def for_kernel(cls, kernel: Any) -> ShellPump | None:
        """The pump for a running ipykernel, or ``None`` when the kernel is not one this module knows
        (waits then serve only the main-thread queue, and widget messages wait for the cell's end)."""
        if kernel is None or getattr(kernel, "session", None) is None:
            return None
        try:
            return cls._for_ipykernel(kernel)
        except (AttributeError, TypeError) as exc:  # an ipykernel whose internals moved
            log.warning("nbagent: widget messages will wait for --wait cells to end (%s)", exc)
            return None

    @classmethod
    def _for_ipykernel(cls, kernel: Any) -> ShellPump | None:
        channel_thread = getattr(kernel, "shell_channel_thread", None)
        if hasattr(kernel, "shell_main"):  # ipykernel 7
            if channel_thread is not None:
                manager = channel_thread.manager
                pair = manager.get_shell_channel_to_subshell_pair(None)
                socket, reply = pair.to_socket, manager.get_subshell_to_shell_channel_socket(None)
            else:
                stream = kernel.shell_stream
                socket, reply = stream.socket, stream
            io_loop = kernel.io_loop

            def requeue7(frames: list[Any]) -> None:
                io_loop.add_callback(kernel.shell_main, None, frames)

            return cls(kernel, socket, reply, requeue7, "7")
        if hasattr(kernel, "schedule_dispatch") and getattr(kernel, "shell_stream", None) is not None:
            stream = kernel.shell_stream

            def requeue6(frames: list[Any]) -> None:
                kernel.schedule_dispatch(kernel.dispatch_shell, frames)

            return cls(kernel, stream.socket, stream, requeue6, "6")
        return None

    def available(self) -> bool:
        return not self.socket.closed

    def wait_and_serve(self, wake_fd: int, timeout: float | None = None) -> None:
        """Block until ``wake_fd`` is readable, a request arrives or ``timeout`` seconds pass; then
        serve every request waiting."""
        import zmq

        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        poller.register(wake_fd, zmq.POLLIN)
        poller.poll(None if timeout is None else max(0, int(timeout * 1000)))
        self.serve()

    def serve(self) -> None:
        """Read every request waiting in the socket: widget messages are handled, others requeued."""
        import zmq

        while True:
            try:
                frames = self.socket.recv_multipart(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                return
            msg = self._comm_message(frames)
            if msg is None:
                self.requeued += 1
                self._requeue(frames)
                continue
            idents, message = msg
            handler = self.kernel.shell_handlers.get(message["header"]["msg_type"])
            if handler is None:
                continue
            self.served += 1
            try:
                result = handler(self.reply_stream, idents, message)
                if result is not None and hasattr(result, "close"):
                    result.close()  # comm handlers are synchronous; never leave a coroutine behind
            except Exception:
                log.exception("nbagent: a widget message failed while a cell waited")

    def _comm_message(self, frames: list[Any]) -> tuple[list[Any], dict[str, Any]] | None:
        """``(idents, message)`` when ``frames`` is a widget message; ``None`` for anything else."""
        session = self.kernel.session
        try:
            idents, rest = session.feed_identities(frames, copy=False)
            header = session.deserialize(rest, content=False, copy=False)["header"]
            if header.get("msg_type") not in COMM_TYPES:
                return None
            return idents, session.deserialize(rest, content=True, copy=False)
        except Exception:  # not a serialized message (ipykernel 7's "stop aborting" marker, say)
            return None
