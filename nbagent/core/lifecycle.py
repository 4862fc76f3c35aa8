"""The driver's life as one state machine (SPEC §1 latch, §3.2, §3.6, §5, §6).

:class:`Lifecycle` owns everything that says where a driver is in its life: its
:class:`DriverState`, the published status, the running turn's signal and the driver task, the
failed write that stopped the session, a ``cancel()``'s deferred clear, the waking calls still on
their way from other threads, the ``session_start`` listeners' task, and the ``when_idle()``
waiters. Each change is one named transition below, with its invariants beside it:

- ``driving`` (a driver task runs) holds exactly while :attr:`signal` is set: :meth:`begin` sets
  it, :meth:`converge` clears it.
- The status notices alternate: ``"running"`` on :meth:`begin`, ``"idle"`` on :meth:`converge`,
  ``"closed"`` once on :meth:`shut`; the same status is never published twice in a row.
- A latch is set only while idle or running (never once closing), and a new :meth:`begin` or
  :meth:`drop_latch` consumes it.
- The first turn opens only after every ``session_start`` listener has finished (:meth:`ready`).
- :meth:`wind_down` (``close()``) cancels the running turn and the ``session_start`` task and
  waits for both before the state may become ``CLOSED``.

States move from any thread (deliveries and cancels come from others) under one lock; the rest
changes on the agent's loop thread. The driver does the work around each transition (opening
turns, committing, notices); this module imports none of it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbagent.core.notices import Status
    from nbagent.core.signal import CancelSignal


class DriverState(Enum):
    """Where the driver is in its life (the failed-write ``fault`` is kept beside it, as the error)."""

    IDLE = "idle"
    """No driver task: a waking call starts one."""
    RUNNING = "running"
    """A driver task runs turns while there is waking work."""
    LATCHED = "latched"
    """A waking call came after ``cancel()`` and before the driver converged: it restarts the
    driver right after convergence (SPEC §1). Set while running, kept until the restart."""
    CLOSING = "closing"
    """``close()`` was called: no new turn opens; a running driver winds down."""
    CLOSED = "closed"


_LATCHABLE = (DriverState.IDLE, DriverState.RUNNING)
_CONVERGING = (DriverState.RUNNING,)
_UNLATCHING = (DriverState.LATCHED,)


class Lifecycle:
    """One driver's life: its state, status, signal, task, fault and the pending wake-ups."""

    __slots__ = (
        "_cancels",
        "_idle_waiters",
        "_lock",
        "_publish",
        "_start_done",
        "_start_task",
        "_started",
        "_woken_at",
        "deferred_clear",
        "fault",
        "signal",
        "state",
        "status",
        "task",
        "wakes_in_flight",
    )

    def __init__(self, publish: Callable[[Status], None]) -> None:
        self._publish = publish
        """Posts a ``"status"`` notice (called only when the status changes)."""
        self.state = DriverState.IDLE
        self.status: Status = "idle"
        """The status last published."""
        self.signal: CancelSignal | None = None
        """The running turn's signal: set exactly while a driver task is running."""
        self.task: asyncio.Task[None] | None = None
        self.fault: BaseException | None = None
        """The failed write that stopped the session (deliveries are refused; resume repairs)."""
        self.deferred_clear = False
        """A ``cancel()`` inside an ``"event"`` callback: the inbox is cleared after the round."""
        self.wakes_in_flight = 0
        """Waking calls from other threads whose wake has not reached the loop yet."""
        self._cancels = self._woken_at = 0  # cancel() calls so far, and when the driver last started
        self._lock = threading.Lock()
        self._started = False
        self._start_done: asyncio.Event | None = None
        self._start_task: asyncio.Task[None] | None = None
        self._idle_waiters: list[asyncio.Future[None]] = []

    # -- queries ----------------------------------------------------------------------------------

    @property
    def driving(self) -> bool:
        """A driver task is running (also while closing, until it has wound down)."""
        return self.signal is not None

    @property
    def aborting(self) -> bool:
        """A driver task runs a cancelled turn (a waking call now is latched for after it)."""
        signal = self.signal
        return signal is not None and signal.cancelled

    @property
    def latched(self) -> bool:
        return self.state is DriverState.LATCHED

    @property
    def closing(self) -> bool:
        """``close()`` was called (it stays true once closed)."""
        return self.state is DriverState.CLOSING or self.state is DriverState.CLOSED

    @property
    def closed(self) -> bool:
        return self.state is DriverState.CLOSED

    @property
    def stopping(self) -> bool:
        """The driver must not open another turn (closing, or the session faulted)."""
        return self.closing or self.fault is not None

    @property
    def idle(self) -> bool:
        """Nothing runs, nothing is latched and no waking call is on its way: ``when_idle()`` resolves."""
        return not (self.signal is not None or self.state is DriverState.LATCHED or self.wakes_in_flight)

    @property
    def uncancelled(self) -> bool:
        """No ``cancel()`` came since the driver last started (a wake's turn may open empty)."""
        return self._cancels == self._woken_at

    def _move(self, new: DriverState, only_from: tuple[DriverState, ...] | None = None) -> bool:
        """Change the state unless it is not one of ``only_from``; ``True`` if it changed."""
        with self._lock:
            if only_from is not None and self.state not in only_from:
                return False
            self.state = new
            return True

    def _set_status(self, status: Status) -> None:
        if status != self.status:
            self.status = status
            self._publish(status)

    # -- driving ----------------------------------------------------------------------------------

    def begin(self, signal: CancelSignal) -> None:
        """A driver starts (consuming a latch): ``RUNNING`` with its first turn's ``signal``, status
        ``"running"``."""
        self._move(DriverState.RUNNING)
        self.signal = signal
        self._woken_at = self._cancels
        self._set_status("running")

    def ready(self, listeners: bool) -> bool:
        """``False`` while the ``session_start`` listeners (if there are ``listeners``) have not
        finished: the first turn then waits in :meth:`wait_started` (SPEC §3.6)."""
        if not self._started and listeners:
            return False
        self._started = True
        return True

    async def wait_started(self) -> None:
        """Wait for the ``session_start`` listeners to finish."""
        if self._start_done is not None:
            await self._start_done.wait()
        self._started = True

    def run(self, task: asyncio.Task[None]) -> None:
        """The driver task that runs the turns."""
        self.task = task

    def renew(self, signal: CancelSignal) -> None:
        """The next queued turn opens with a fresh ``signal``."""
        self.signal = signal

    def converge(self) -> bool:
        """The driver task ends: no signal, no task; unless closing, ``IDLE`` (a latch stays, for
        its restart) and status ``"idle"``. ``False`` when closing: ``close()`` finishes the rest."""
        self.signal = None
        self.task = None
        if self.closing:
            return False
        self._move(DriverState.IDLE, _CONVERGING)
        self._set_status("idle")  # an "idle" callback may start a new driver: it then owns the latch
        return True

    # -- waking calls and cancels -----------------------------------------------------------------

    def latch(self) -> None:
        """A waking call came while the running turn is cancelled: restart after convergence."""
        self._move(DriverState.LATCHED, _LATCHABLE)

    def drop_latch(self) -> None:
        if self.state is DriverState.LATCHED:
            self._move(DriverState.RUNNING if self.driving else DriverState.IDLE, _UNLATCHING)

    def wake_sent(self) -> None:
        """A waking call from another thread is on its way (counted before its splice commits:
        ``when_idle()`` waits for it)."""
        with self._lock:
            self.wakes_in_flight += 1

    def wake_arrived(self) -> None:
        """A waking call from another thread reached the loop (or never will)."""
        with self._lock:
            self.wakes_in_flight -= 1

    def cancelled(self) -> None:
        """A ``cancel()`` (counted before its clear commits: a wake that finds it cleared sees it)."""
        with self._lock:
            self._cancels += 1

    def defer_clear(self) -> None:
        self.deferred_clear = True

    def take_deferred_clear(self) -> bool:
        """``True`` once after :meth:`defer_clear`: the clear is due now."""
        due, self.deferred_clear = self.deferred_clear, False
        return due

    def fail(self, error: BaseException) -> bool:
        """A write failed that the turn cannot do without: the session stops; ``True`` for the first."""
        if self.fault is not None:
            return False
        self.fault = error
        return True

    # -- session start ----------------------------------------------------------------------------

    def session_starting(self) -> None:
        """The ``session_start`` listeners are to run soon: the first turn waits for them."""
        self._start_done = asyncio.Event()

    def session_start_running(self, task: asyncio.Task[None]) -> None:
        self._start_task = task

    def session_started(self) -> None:
        """The ``session_start`` listeners finished (or never ran, the agent closing first)."""
        self._started = True
        if self._start_done is not None:
            self._start_done.set()

    # -- closing ----------------------------------------------------------------------------------

    async def wind_down(self) -> None:
        """``CLOSING``: cancel the running turn and the ``session_start`` listeners' task, and wait
        until both have ended."""
        self._move(DriverState.CLOSING)
        signal = self.signal
        if signal is not None:
            signal.cancel("closed")
        start = self._start_task
        if start is not None and not start.done():
            start.cancel()
            await asyncio.wait({start})
        while self.task is not None and not self.task.done():
            await asyncio.wait({self.task})

    def shut(self, release: Callable[[], None]) -> None:
        """``CLOSED``; then ``release`` (the lease, the file), status ``"closed"``, and every
        ``when_idle()`` waiter resolves."""
        self._move(DriverState.CLOSED)
        release()
        self._set_status("closed")
        self.resolve_idle()

    # -- when_idle() ------------------------------------------------------------------------------

    async def wait_idle(self, loop: asyncio.AbstractEventLoop) -> None:
        while not self.idle:
            fut = loop.create_future()
            self._idle_waiters.append(fut)
            await fut

    def maybe_idle(self) -> None:
        if self.idle:
            self.resolve_idle()

    def resolve_idle(self) -> None:
        waiters, self._idle_waiters = self._idle_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)
