"""The turn driver's state and the narrow seams the loop, the tools and the inbox use.

The :class:`Driver` owns what changes while an agent runs: the journal and the projections of
the log, its life (one :class:`~nbagent.core.lifecycle.Lifecycle`: the state, status, signal,
task, fault and pending wake-ups), and the batching of streamed chunks. It reads what the next
request offers (model, tools, system prompt, approver) from the agent's
:class:`~nbagent.core.offer.Offer`. It is given its fixed configuration as a :class:`DriverConfig`
and never calls the ``Agent`` (the agent's hooks hold it, for their payloads): the agent is the
public face over it, and ``loop.py`` and ``tool_batch.py`` see only its
:class:`~nbagent.core.loop_port.LoopPort`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, Literal

from nbagent.core.chunk_timer import ChunkTimer
from nbagent.core.driver_port import DriverPort
from nbagent.core.driver_state import DriverConfig, OpenTurn, Resumed
from nbagent.core.estimate import Meter
from nbagent.core.header_state import HeaderState
from nbagent.core.hooks import SessionStart
from nbagent.core.inbox import InboxState, PlannedSplice, SplicePlan, plan_splice
from nbagent.core.journal import Build, Journal, Plan
from nbagent.core.lifecycle import Lifecycle
from nbagent.core.notices import LiveNotice, Notices, Status
from nbagent.core.offer import Offer
from nbagent.core.ports import Releasable, SessionFile
from nbagent.core.projections import Projections
from nbagent.core.signal import CancelSignal
from nbagent.errors import NbagentError, ReentrantDeliveryError, SessionClosedError, SessionWriteError
from nbagent.log.events import NEXT_STEP, NEXT_TURN, AssistantChunk, Event, Record, TurnStart
from nbagent.log.messages import Message, UserMessage, coerce_user_message
from nbagent.log.vocabulary import Failure, Target

log = logging.getLogger("nbagent")

in_driver: contextvars.ContextVar[Any] = contextvars.ContextVar("nbagent_in_driver", default=None)
"""The agent whose driver task (or a task it spawned) is running: ``close()`` refuses to deadlock."""


class Driver(DriverPort):
    """One agent's running state; it implements :class:`~nbagent.core.loop_port.LoopPort`, all that
    ``loop``/``tool_batch`` see, and the seams the agent and the inbox use."""

    def __init__(
        self,
        config: DriverConfig,
        *,
        loop: asyncio.AbstractEventLoop,
        file: SessionFile | None,
        lease: Releasable | None,
        offer: Offer,
        resumed: Resumed | None,
    ) -> None:
        self.config = config
        self.loop = loop
        self.file = file
        self._lease = lease
        self.offer = offer
        """What the next request offers (the agent's; a change is recorded by a ``request/header``)."""
        self.prelude: Callable[[InboxState, int], Plan] | None = None
        """Drafts (and their inbox) written in the next turn's first commit, before ``turn/start``."""
        self.meter = Meter(offer.model)  # the running token counts of requests (SPEC §12)
        self.notices = Notices(loop, threading.get_ident())
        self.notices.after_event_round = self._after_event_round
        self.notices.on_change = self._subscriptions_changed
        self.projections = Projections(
            resumed.next_seq if resumed else 0, resumed.prefix if resumed else None
        )
        self.journal = Journal(
            file=file,
            session_id=config.session_id,
            next_seq=resumed.next_seq if resumed else 0,
            last_time=resumed.last_time if resumed else 0,
            inbox=resumed.inbox if resumed else InboxState(),
            on_commit=self.projections.add,
            publish=self.notices.enqueue,
        )
        self.life = Lifecycle(self._publish_status)
        """Where the driver is in its life: state, status, signal, task, fault, pending wake-ups."""
        self.last_turn = resumed.last_turn if resumed else 0
        self.header_state = HeaderState(resumed.last_header if resumed else None)
        self.chunks = ChunkTimer(loop, self._timed_flush)

    @property
    def fault(self) -> BaseException | None:
        """The failed write that stopped the session, if one did (then nothing more is written)."""
        return self.life.fault

    # -- checks -----------------------------------------------------------------------------------

    def on_loop_thread(self) -> bool:
        return self.notices.on_loop_thread()

    def check_can_mutate(self) -> None:
        """Raise if deliveries and inbox changes are refused now (closed, inside ``"event"``, faulted)."""
        life = self.life
        if life.closed:
            raise SessionClosedError(
                f"session {self.config.session_id} is closed; resume it with nbagent.resume_session()"
            )
        if self.notices.in_event:
            raise ReentrantDeliveryError(
                "deliveries and inbox changes are not allowed inside an 'event' callback; defer them "
                "with loop.call_soon(...)"
            )
        if life.fault is not None:
            raise NbagentError(
                f"session {self.config.session_id} stopped after a failed write ({life.fault}); the "
                "log on disk is consistent — resume the session to continue"
            )

    def accept(self, message: UserMessage | str) -> UserMessage:
        self.check_can_mutate()
        return coerce_user_message(message)

    # -- deliveries -------------------------------------------------------------------------------

    def deliver(self, message: UserMessage | str, target: Target, *, wake: bool) -> UserMessage:
        msg = self.accept(message)
        fresh = isinstance(message, str)  # its id was drawn just now: it cannot be pending already
        if not wake:
            self.mutate(
                lambda s: [plan_splice(s, target, len(s.queue(target)), 0, (msg,), fresh=fresh)], checked=True
            )
            return msg
        # A resumed log is read in full before a waking call records anything (SPEC §6.3).
        self.projections.materialise()
        on_loop = self.on_loop_thread()
        life = self.life
        if not on_loop:  # counted before the splice commits: when_idle() waits for this wake
            life.wake_sent()
        try:
            aborting = life.aborting
            if aborting:
                target = NEXT_TURN
            self.mutate(
                lambda s: [plan_splice(s, target, len(s.queue(target)), 0, (msg,), fresh=fresh)], checked=True
            )
        except BaseException:
            if not on_loop:
                life.wake_arrived()
            raise
        if aborting:
            life.latch()
        if on_loop:
            self._wake()
        elif not self._call_soon(self._wake_from_thread, msg.id):
            life.wake_arrived()
        return msg

    def mutate(self, plan: SplicePlan, *, checked: bool = False) -> list[PlannedSplice]:
        """Commit the splices ``plan`` makes against the staged inbox; returns them."""
        if not checked:
            self.check_can_mutate()
        subs = self.notices.subs

        def build(state: InboxState) -> Plan:
            splices = [sp for sp in plan(state) if sp is not None]
            out = Plan(inbox=splices[-1].after if splices else None, result=splices)
            for sp in splices:
                out.drafts.append(sp.event)
                if "inbox/discarded" in subs:
                    out.notices += [("inbox/discarded", LiveNotice("inbox/discarded", m)) for m in sp.removed]
                if "inbox/inserted" in subs:
                    out.notices += [("inbox/inserted", LiveNotice("inbox/inserted", m)) for m in sp.inserted]
            return out

        return self.submit(build) or []

    def clear(self) -> int:
        def plan(state: InboxState) -> list[PlannedSplice | None]:
            first = plan_splice(state, NEXT_STEP, 0, None, ())
            second = plan_splice(first.after if first else state, NEXT_TURN, 0, None, ())
            return [first, second]

        return sum(len(sp.removed) for sp in self.mutate(plan))

    # -- control ----------------------------------------------------------------------------------

    def cancel(self, cause: str, *, keep_inbox: bool) -> None:
        """Abort the running turn and (unless ``keep_inbox``) clear the inbox, on the calling thread."""
        life = self.life
        if life.closed:
            return
        life.cancelled()
        on_loop = self.on_loop_thread()
        if not keep_inbox:
            life.drop_latch()
            if on_loop and self.notices.in_event:
                life.defer_clear()
            elif life.fault is None:
                try:
                    self.clear()
                except SessionClosedError:
                    return  # a close() finished meanwhile: nothing is left to cancel
        signal = life.signal
        if signal is not None:
            if on_loop:
                signal.cancel(cause)
            elif signal.mark(cause):
                self._call_soon(signal.fire)

    async def when_idle(self) -> None:
        await self.life.wait_idle(self.loop)

    async def close(self) -> None:
        if self.life.closed:
            return
        if in_driver.get() is self.config.hooks.agent:
            raise RuntimeError(
                "close() was called from inside a turn (a tool, hook or model); call agent.cancel() "
                "there, or close the agent from outside the turn"
            )
        await self.life.wind_down()
        self.chunks.written()
        # From here on deliveries raise SessionClosedError, and no write can touch the store.
        error = self.journal.close()
        self.notices.kick()
        if error is not None:
            log.warning(
                "nbagent: the last staged events of %s were not written: %s", self.config.session_id, error
            )
        elif self.life.fault is not None:  # (a write failed earlier: the close's own were never tried)
            log.warning(
                "nbagent: session %s closed after a failed write; its last events (a running turn's end) "
                "were not written, and the next resume closes what was left open: %s",
                self.config.session_id,
                self.life.fault,
            )
        self.life.shut(self._release)

    def _release(self) -> None:
        if self._lease is not None:
            self._lease.release()
        if self.file is not None:
            self.file.close()

    # -- waking and the driver's lifecycle --------------------------------------------------------

    def _call_soon(self, fn: Callable[..., Any], *args: Any) -> bool:
        try:
            self.loop.call_soon_threadsafe(fn, *args)
            return True
        except RuntimeError:  # the loop is closed: the recorded message stays pending for resume
            log.warning(
                "nbagent: the agent's event loop is closed; %s was not run", getattr(fn, "__name__", fn)
            )
            return False

    def _wake_from_thread(self, message_id: str) -> None:
        """A worker's waking call reaches the loop: it wakes only if its message is still pending
        (a ``cancel()`` from that worker may have cleared it meanwhile: then no turn opens)."""
        self.life.wake_arrived()
        if self.journal.staged_inbox.find(message_id) is not None:
            self._wake()
        self.life.maybe_idle()

    def _wake(self) -> None:
        life = self.life
        if life.stopping:
            life.drop_latch()
            return
        if not life.driving:
            self.start()

    def start(self) -> None:
        """Reserve the driver and open its first turn (synchronously, SPEC §3.2)."""
        life = self.life
        life.begin(CancelSignal(self.loop))
        ctx = contextvars.copy_context()
        ctx.run(in_driver.set, self.config.hooks.agent)
        if not life.ready(bool(self.config.hooks.session_start.listeners)):
            # SPEC §3.6: every session_start listener finishes before the session's first claim.
            life.run(ctx.run(self.loop.create_task, self._drive_after_start()))
            return
        turn = self.open_turn(woken=True)
        if turn is None:
            self.converged()
            return
        life.run(ctx.run(self.loop.create_task, self.config.drive(self, turn)))

    async def _drive_after_start(self) -> None:
        await self.life.wait_started()
        await self.config.drive(self, self.open_turn(woken=True))

    def next_turn(self) -> OpenTurn | None:
        """Open the next queued turn with a fresh signal (``None`` when stopping, when nothing is
        pending, or if none opened)."""
        if self.life.stopping or not self.journal.staged_inbox.pending:
            return None
        self.life.renew(CancelSignal(self.loop))
        return self.open_turn()

    def open_turn(self, *, woken: bool = False) -> OpenTurn | None:
        """Write ``turn/start`` and the first claim (one commit); ``None`` if no turn opened.

        The next queued turn opens only with something to claim; a wake's turn (``woken``) also with
        nothing (a ``"status"`` callback removed its message: SPEC §3.2, §5.2), unless a ``cancel()``
        came since the driver started (a worker's, racing the wake, cleared it)."""
        life = self.life
        signal = life.signal
        assert signal is not None
        if signal.cancelled or life.stopping:
            return None
        number = self.last_turn + 1

        prelude, self.prelude = self.prelude, None

        def build(state: InboxState) -> Plan:
            pre = prelude(state, number) if prelude is not None else Plan()
            plan = Plan(drafts=[*pre.drafts, TurnStart(number)])
            plan.result = self._plan_claim(pre.inbox or state, plan, number, first=True)
            return plan if plan.result or (woken and life.uncancelled) else Plan()

        try:
            claimed = self.submit(build)
        except SessionWriteError as exc:
            self.report(exc, None)
            return None
        if claimed is None:
            return None
        self.last_turn = number
        return OpenTurn(number, tuple(claimed), signal)

    def claim(self, turn: int) -> tuple[UserMessage, ...]:
        """Claim all of ``next-step`` at a later boundary, durably (``()`` when it is empty).

        An empty claim writes nothing and commits nothing: what the driver staged (the last
        step's results and ``step/end``) goes out with the next step's request.
        """

        def build(state: InboxState) -> Plan:
            plan = Plan()
            plan.result = self._plan_claim(state, plan, turn, first=False)
            return plan

        return tuple(self.commit(build, only_if_planned=True) or ())

    def _plan_claim(self, state: InboxState, plan: Plan, turn: int, *, first: bool) -> list[UserMessage]:
        out: list[UserMessage] = []
        step = plan_splice(state, NEXT_STEP, 0, None, (), claim=True)
        if step is not None:
            plan.drafts.append(step.event)
            state = step.after
            out.extend(step.removed)
        if first:
            head = plan_splice(state, NEXT_TURN, 0, 1, (), claim=True)
            if head is not None:
                plan.drafts.append(head.event)
                state = head.after
                out.extend(head.removed)
        if out:
            plan.inbox = state
            if self.notices.wants("inbox/claimed"):
                plan.notices += [("inbox/claimed", LiveNotice("inbox/claimed", m, turn)) for m in out]
        return out

    def converged(self) -> None:
        """The driver stopped: go idle, replay a latched wake, or resolve ``when_idle()`` waiters."""
        life = self.life
        if not life.converge() or life.driving:  # closing; or an "idle" callback started a driver
            return
        if life.latched and self.journal.staged_inbox.pending and life.fault is None:
            self.start()
            if life.driving:
                return
        life.drop_latch()
        life.maybe_idle()

    # -- session start ----------------------------------------------------------------------------

    def begin_session(self, source: Literal["open", "resume"]) -> None:
        """Run the ``session_start`` listeners soon (they may inject startup context)."""
        self.life.session_starting()
        self.loop.call_soon(self._spawn_start, source)

    def _spawn_start(self, source: Literal["open", "resume"]) -> None:
        if self.life.closing:
            self.life.session_started()
            return
        self.life.session_start_running(self.loop.create_task(self._session_start(source)))

    async def _session_start(self, source: Literal["open", "resume"]) -> None:
        try:
            for listener in self.config.hooks.session_start.listeners:
                await listener(SessionStart(self.config.hooks.agent, source))
        except Exception as exc:
            log.exception("nbagent session_start listener failed")
            self.report(exc, None)
        finally:
            self.life.session_started()

    # -- writing ----------------------------------------------------------------------------------

    def submit(self, build: Build) -> Any:
        """Commit a change that a caller waits for (see :meth:`Journal.submit`)."""
        try:
            return self.journal.submit(build)
        finally:
            self.notices.kick()

    def stage(self, change: Build | list[Record]) -> None:
        """Stage the driver's events: committed before the next external effect."""
        try:
            self.journal.stage(change)
        finally:
            self.notices.kick()

    def commit(self, change: Build | list[Record] | None = None, *, only_if_planned: bool = False) -> Any:
        """Commit what the driver staged (and ``change``) before an external effect: streamed chunks
        too (the chunk timer stops); with nothing staged and no ``change``, nothing is written."""
        if change is None and not self.journal.has_staged():
            return self.chunks.written()
        self.chunks.written()
        try:
            return self.journal.commit(change, only_if_planned=only_if_planned)
        finally:
            self.notices.kick()

    def stage_chunk(self, turn: int, step: int, chunk: Mapping[str, Any]) -> None:
        """Stage an ``assistant/chunk``; committed at most 100 ms later, or with the next write."""
        self.journal.stage([AssistantChunk(turn, step, chunk)])
        self.chunks.staged()

    def _timed_flush(self) -> None:
        try:
            self.commit()
        except SessionWriteError as exc:  # the chunks stay staged; the driver's next commit reports it
            log.warning("nbagent: writing streamed chunks failed: %s", exc)

    # -- what the loop reads ----------------------------------------------------------------------

    @property
    def committed_inbox(self) -> InboxState:
        return self.journal.inbox

    @property
    def staged_inbox(self) -> InboxState:
        return self.journal.staged_inbox

    @property
    def committed(self) -> int:
        return self.journal.committed

    def history(self) -> tuple[Message, ...]:
        return self.projections.history()

    # -- notices ----------------------------------------------------------------------------------

    def _publish_status(self, status: Status) -> None:
        if self.notices.wants("status"):
            self.notices.post("status", LiveNotice("status", status=status))

    def report(self, error: Failure | BaseException, turn: int | None, *, fatal: bool = False) -> None:
        """Post an ``"error"`` notice; ``fatal``: ``error``, a write the turn cannot do without,
        failed, so the session stops taking deliveries and its staged events are dropped (resume
        repairs it)."""
        if fatal and isinstance(error, BaseException) and self.life.fail(error):
            self.journal.discard_staged(error)
        self.notices.post("error", LiveNotice("error", error=error, turn=turn))

    def _after_event_round(self) -> None:
        life = self.life
        if life.take_deferred_clear() and not life.closed and life.fault is None:
            self.clear()

    def _subscriptions_changed(self) -> None:
        self.journal.publish_events = self.notices.wants("event")

    def events(self) -> tuple[Event, ...]:
        return self.projections.events()
