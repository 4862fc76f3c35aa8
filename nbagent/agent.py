"""The ``Agent``: deliveries, control, live notices. The turn loop itself lives in ``loop.py``."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbagent.errors import NbagentError, ReentrantDeliveryError, SessionClosedError, SessionWriteError
from nbagent.events import ASSISTANT_CHUNK, INBOX_SPLICED, NEXT_STEP, NEXT_TURN, TURN_START, Event
from nbagent.hooks import Hooks, SessionStart
from nbagent.inbox import Inbox, InboxState, Splice, plan_splice
from nbagent.journal import Draft, Journal, Notice, Plan
from nbagent.lease import Lease
from nbagent.messages import UserMessage, coerce_user_message
from nbagent.models.base import Model
from nbagent.models.registry import resolve_model
from nbagent.projections import EventList, History
from nbagent.retry import RetryPolicy
from nbagent.runs import Run, fold_run
from nbagent.signal import CancelSignal
from nbagent.store import SessionFile
from nbagent.tools import Tool, as_tools

log = logging.getLogger("nbagent")

in_driver: contextvars.ContextVar[Agent | None] = contextvars.ContextVar("nbagent_in_driver", default=None)
"""Set inside the driver task (and tasks it spawns) so ``close()`` can refuse to deadlock."""


@dataclass(frozen=True, slots=True)
class LiveNotice:
    """What a live-notice callback receives; the attributes that matter depend on ``name``."""

    name: str
    message: UserMessage | None = None
    turn: int | None = None
    status: str | None = None
    error: Any = None
    event: Event | None = None


@dataclass(slots=True)
class OpenTurn:
    number: int
    claimed: tuple[UserMessage, ...]
    signal: CancelSignal


class Agent:
    """One live agent session: an append-only log, an inbox, and a driver that runs turns.

    Build one with :func:`nbagent.open_session` or :func:`nbagent.resume_session`.
    """

    def __init__(
        self,
        *,
        loop: asyncio.AbstractEventLoop,
        file: SessionFile | None,
        lease: Lease | None,
        session_id: str,
        model: Model | str | None,
        tools: Iterable[Tool | Callable[..., Any]],
        system: str | None,
        max_steps: int,
        retry: RetryPolicy | None,
        next_seq: int = 0,
        last_time: int = 0,
        inbox: InboxState | None = None,
        last_turn: int = 0,
        last_header: dict[str, Any] | None = None,
        resumed: bool = False,
        events_loader: Callable[[], list[Event]] | None = None,
        history_loader: Callable[[], list[Any]] | None = None,
    ) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._file = file
        self._lease = lease
        self.session_id = session_id
        self.path: Path | None = file.path if file else None
        self.model: Model = resolve_model(model)
        self.tools: dict[str, Tool] = as_tools(tools)
        self._schemas: tuple[Any, ...] | None = None
        self.system = system
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        self.max_steps = max_steps
        self.retry_policy = retry or RetryPolicy()
        self.hooks = Hooks()
        self.inbox = Inbox(self)
        self.approver: Callable[[Tool, Any], Awaitable[str]] | None = None
        """Asked before a tool that ``requires_approval`` runs: returns ``"allowed-once"``,
        ``"rejected"`` or ``"unavailable"``. With none set, such calls are ``unavailable``."""
        self.status = "idle"
        self._events = EventList(next_seq, events_loader)
        self._history = History(history_loader if next_seq else None)
        self._subs: dict[str, list[Callable[[LiveNotice], Any]]] = {}
        self._notices: deque[Notice] = deque()
        self._tls = threading.local()
        self._journal = Journal(
            file=file,
            session_id=session_id,
            next_seq=next_seq,
            last_time=last_time,
            inbox=inbox or InboxState(),
            on_commit=self._on_commit,
            publish=self._enqueue,
        )
        self._last_turn = last_turn
        self._last_header = last_header
        self._header_reason = "resume" if resumed and last_header is not None else "initial"
        self._signal: CancelSignal | None = None
        self._driving = False
        self._driver_task: asyncio.Task[None] | None = None
        self._latched = False
        self._closing = False
        self._closed = False
        self._fault: BaseException | None = None
        self._deferred_clear = False
        self._idle_waiters: list[asyncio.Future[None]] = []
        self.repaired = False
        """``True`` when resuming appended crash-repair events (the log had ended inside a turn)."""
        self._chunk_timer: asyncio.TimerHandle | None = None
        self._last_chunk_flush = 0.0

    # -- public surface ---------------------------------------------------------------------------

    @property
    def events(self) -> tuple[Event, ...]:
        """Every durable event committed so far."""
        return self._events.all()

    @property
    def closed(self) -> bool:
        return self._closed

    def followup(self, message: UserMessage | str) -> UserMessage:
        """Queue ``message`` as its own turn (``next-turn``, FIFO) and wake the driver."""
        return self._deliver(message, NEXT_TURN, wake=True)

    def steer(self, message: UserMessage | str) -> UserMessage:
        """Queue ``message`` for the running turn's next step (a new turn when idle) and wake."""
        return self._deliver(message, NEXT_STEP, wake=True)

    def inject(self, message: UserMessage | str) -> UserMessage:
        """Queue context for the nearest later boundary without starting the model."""
        return self._deliver(message, NEXT_STEP, wake=False)

    def cancel(self, cause: str = "user", *, keep_inbox: bool = False) -> None:
        """Abort the running turn (cooperatively) and, unless ``keep_inbox``, cancel pending work."""
        if not self._on_loop_thread():
            self._call_on_loop(lambda: self.cancel(cause, keep_inbox=keep_inbox))
            return
        if self._closed:
            return
        if not keep_inbox:
            self._latched = False
            if getattr(self._tls, "in_event", False):
                self._deferred_clear = True
            elif self._fault is None:
                self._clear()
        if self._driving and self._signal is not None:
            self._signal.cancel(cause)

    async def when_idle(self) -> None:
        """Resolve once the driver has stopped and nothing waking is latched."""
        if not self._driving:
            return
        fut = self._loop.create_future()
        self._idle_waiters.append(fut)
        await fut

    async def run(self, message: UserMessage | str, *, steer: bool = False) -> Run:
        """Deliver ``message`` (a followup, or steering), wait until idle, return the owned run."""
        start = self._journal.committed
        self.steer(message) if steer else self.followup(message)
        await self.when_idle()
        return fold_run(self._events.since(start))

    async def close(self) -> None:
        """Abort a running turn (cause ``"closed"``), wait for it, keep the inbox, release the lease."""
        if self._closed:
            return
        if in_driver.get() is self:
            raise RuntimeError(
                "close() was called from inside a turn (a tool, hook or model); call agent.cancel() "
                "there, or close the agent from outside the turn"
            )
        self._closing = True
        self._latched = False
        if self._driving and self._signal is not None:
            self._signal.cancel("closed")
        while self._driver_task is not None and not self._driver_task.done():
            await asyncio.wait({self._driver_task})
        self._flush()
        self._closed = True
        if self._lease is not None:
            self._lease.release()
        if self._file is not None:
            self._file.close()
        self._set_status("closed")
        self._resolve_idle()

    def on(self, name: str, callback: Callable[[LiveNotice], Any]) -> Callable[[], None]:
        """Subscribe to a live notice; returns a function that unsubscribes."""
        self._subs.setdefault(name, []).append(callback)
        self._journal.publish_events = "event" in self._subs

        def off() -> None:
            subs = self._subs.get(name, [])
            if callback in subs:
                subs.remove(callback)
                if not subs:
                    self._subs.pop(name, None)
            self._journal.publish_events = "event" in self._subs

        return off

    def add_tool(self, tool: Tool | Callable[..., Any]) -> Tool:
        """Offer another tool from the next request on (a ``request/header`` records the change)."""
        (added,) = as_tools([tool]).values()
        if added.name in self.tools:
            raise ValueError(f"a tool named {added.name!r} is already offered")
        self.tools[added.name] = added
        self._schemas = None
        return added

    @property
    def tool_schemas(self) -> tuple[Any, ...]:
        """The JSON schemas of the offered tools, as requests carry them (cached until a change)."""
        if self._schemas is None or len(self._schemas) != len(self.tools):
            self._schemas = tuple(t.schema for t in self.tools.values())
        return self._schemas

    def set_model(self, model: Model | str) -> None:
        """Use ``model`` for later requests (a ``request/header`` records the change)."""
        self.model = resolve_model(model)
        if self._file is not None:
            self._file.update_session(self.session_id, model=self.model.name)

    def __repr__(self) -> str:
        return f"<Agent {self.session_id} {self.status} model={self.model.name!r} events={len(self._events)}>"

    # -- delivery ---------------------------------------------------------------------------------

    def _on_loop_thread(self) -> bool:
        return threading.get_ident() == self._loop_thread

    def _check_can_mutate(self) -> None:
        if self._closed:
            raise SessionClosedError(
                f"session {self.session_id} is closed; resume it with nbagent.resume_session()"
            )
        if getattr(self._tls, "in_event", False):
            raise ReentrantDeliveryError(
                "deliveries and inbox changes are not allowed inside an 'event' callback; defer them "
                "with loop.call_soon(...)"
            )
        if self._fault is not None:
            raise NbagentError(
                f"session {self.session_id} stopped after a failed write ({self._fault}); the log on "
                "disk is consistent — resume the session to continue"
            )

    def _accept(self, message: UserMessage | str) -> UserMessage:
        self._check_can_mutate()
        return coerce_user_message(message)

    def _deliver(self, message: UserMessage | str, target: str, *, wake: bool) -> UserMessage:
        msg = self._accept(message)
        aborting = wake and self._driving and self._signal is not None and self._signal.cancelled
        if aborting:
            target = NEXT_TURN
        self._mutate(lambda s: [plan_splice(s, target, len(s.queue(target)), 0, (msg,))], checked=True)
        if wake:
            if self._on_loop_thread():
                self._wake(aborting)
            else:
                self._call_on_loop(self._wake, aborting)
        return msg

    def _call_on_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        """Hand ``fn`` to the agent's loop from another thread (dropped if that loop is gone)."""
        try:
            self._loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:  # the loop is closed: the recorded message stays pending for resume
            log.warning(
                "nbagent: the agent's event loop is closed; %s was not run", getattr(fn, "__name__", fn)
            )

    def _mutate(
        self, plan: Callable[[InboxState], Sequence[Splice | None]], *, checked: bool = False
    ) -> list[Splice]:
        if not checked:
            self._check_can_mutate()
        recorded: list[Splice] = []

        def build(state: InboxState) -> Plan:
            splices = [sp for sp in plan(state) if sp is not None]
            recorded[:] = splices
            out = Plan(inbox=splices[-1].after if splices else None)
            subs = self._subs
            for sp in splices:
                out.drafts.append((INBOX_SPLICED, sp.data, sp.after))
                if "inbox/discarded" in subs:
                    out.notices += [("inbox/discarded", LiveNotice("inbox/discarded", m)) for m in sp.removed]
                if "inbox/inserted" in subs:
                    out.notices += [("inbox/inserted", LiveNotice("inbox/inserted", m)) for m in sp.inserted]
            return out

        self._submit(build)
        return recorded

    def _clear(self) -> int:
        def plan(state: InboxState) -> list[Splice | None]:
            first = plan_splice(state, NEXT_STEP, 0, None, ())
            second = plan_splice(first.after if first else state, NEXT_TURN, 0, None, ())
            return [first, second]

        return sum(len(sp.removed) for sp in self._mutate(plan))

    def _wake(self, latch: bool) -> None:
        if self._closed or self._closing or self._fault is not None:
            return
        if not self._driving:
            self._start_driver()
        elif latch:
            self._latched = True

    # -- driver lifecycle -------------------------------------------------------------------------

    def _start_driver(self) -> None:
        from nbagent.loop import drive

        self._driving = True
        self._signal = CancelSignal(self._loop)
        self._set_status("running")
        turn = self._open_turn()
        if turn is None:
            self._driving = False
            self._signal = None
            self._set_status("idle")
            self._resolve_idle()
            return
        ctx = contextvars.copy_context()
        ctx.run(in_driver.set, self)
        self._driver_task = ctx.run(self._loop.create_task, drive(self, turn))

    def _open_turn(self) -> OpenTurn | None:
        """Write ``turn/start`` and the first claim (one commit); ``None`` if no turn opened."""
        signal = self._signal
        assert signal is not None
        if signal.cancelled or self._closing:
            return None
        number = self._last_turn + 1
        claimed: list[UserMessage] = []

        def build(state: InboxState) -> Plan:
            plan = Plan(drafts=[(TURN_START, {"turn": number}, None)])
            self._plan_claim(state, plan, number, first=True, out=claimed)
            return plan

        try:
            self._submit(build)
        except SessionWriteError as exc:
            self._report_error(exc, None)
            return None
        self._last_turn = number
        return OpenTurn(number, tuple(claimed), signal)

    def _plan_claim(
        self, state: InboxState, plan: Plan, turn: int, *, first: bool, out: list[UserMessage]
    ) -> None:
        step = plan_splice(state, NEXT_STEP, 0, None, (), claim=True)
        if step is not None:
            plan.drafts.append((INBOX_SPLICED, step.data, step.after))
            state = step.after
            out.extend(step.removed)
        if first:
            head = plan_splice(state, NEXT_TURN, 0, 1, (), claim=True)
            if head is not None:
                plan.drafts.append((INBOX_SPLICED, head.data, head.after))
                state = head.after
                out.extend(head.removed)
        if out:
            plan.inbox = state
            if "inbox/claimed" in self._subs:
                plan.notices += [("inbox/claimed", LiveNotice("inbox/claimed", m, turn)) for m in out]

    def _claim(self, turn: int) -> tuple[UserMessage, ...]:
        """Claim all of ``next-step`` at a later boundary (staged: committed before the request)."""
        claimed: list[UserMessage] = []

        def build(state: InboxState) -> Plan:
            plan = Plan()
            self._plan_claim(state, plan, turn, first=False, out=claimed)
            return plan

        self._submit(build, flush=False)
        return tuple(claimed)

    def _driver_finished(self) -> None:
        self._driving = False
        self._signal = None
        self._driver_task = None
        if self._closing:
            return
        self._set_status("idle")
        if self._latched and self._journal.inbox.pending and self._fault is None:
            self._latched = False
            self._start_driver()
            if self._driving:
                return
        self._latched = False
        self._resolve_idle()

    def _resolve_idle(self) -> None:
        waiters, self._idle_waiters = self._idle_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    # -- writing ----------------------------------------------------------------------------------

    def _submit(self, build: Callable[[InboxState], Plan], *, flush: bool = True) -> list[Event]:
        try:
            return self._journal.submit(build, flush=flush)
        finally:
            self._kick()

    def _write(self, drafts: list[Draft], *, flush: bool = True) -> list[Event]:
        """Append driver events; ``flush=False`` stages them for the next commit.

        The driver stages what it may and commits before each external effect: before a request
        is sent, before a tool body or a hook listener runs, and at the end of a turn.
        """
        try:
            return self._journal.append(drafts, flush=flush)
        finally:
            self._kick()

    def _stage_chunk(self, data: dict[str, Any]) -> None:
        """Stage an ``assistant/chunk``; committed at most 100 ms later, or with the next write."""
        self._journal.append([(ASSISTANT_CHUNK, data, None)], flush=False)
        now = self._loop.time()
        if now - self._last_chunk_flush >= 0.1:
            self._flush()
        elif self._chunk_timer is None:
            self._chunk_timer = self._loop.call_at(self._last_chunk_flush + 0.1, self._flush)

    def _flush(self) -> None:
        """Commit everything staged (driver events and batched chunks)."""
        if self._chunk_timer is not None:
            self._chunk_timer.cancel()
            self._chunk_timer = None
        self._last_chunk_flush = self._loop.time()
        if self._journal.has_staged():
            try:
                self._journal.flush()
            finally:
                self._kick()

    def _on_commit(self, events: Sequence[Event], attachments: Sequence[Any]) -> None:
        self._events.extend(events)
        self._history.add(events, attachments)

    # -- notices ----------------------------------------------------------------------------------

    def _enqueue(self, notices: list[Notice]) -> None:
        """Called by the journal, in commit order, under its lock: only queue, never call out."""
        subs = self._subs
        if subs:
            self._notices.extend(n for n in notices if n[0] in subs)

    def _kick(self) -> None:
        if not self._notices:
            return
        if self._on_loop_thread():
            self._drain()
        else:
            try:
                self._loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # the loop is closed: nobody is listening any more
                self._notices.clear()

    def _drain(self) -> None:
        queue = self._notices
        while queue:
            name, payload = queue.popleft()
            if name == "event":
                self._dispatch("event", LiveNotice("event", event=payload))
            else:
                self._dispatch(name, payload)

    def _dispatch(self, name: str, notice: LiveNotice) -> None:
        is_event = name == "event"
        for callback in list(self._subs.get(name, ())):
            if is_event:
                self._tls.in_event = True
            try:
                callback(notice)
            except Exception:
                log.exception("nbagent %r callback %r failed", name, callback)
            finally:
                if is_event:
                    self._tls.in_event = False
        if is_event and self._deferred_clear:
            self._deferred_clear = False
            if not self._closed and self._fault is None:
                self._clear()

    def _set_status(self, status: str) -> None:
        if status == self.status:
            return
        self.status = status
        if "status" in self._subs:
            self._notices.append(("status", LiveNotice("status", status=status)))
            if self._on_loop_thread():
                self._drain()

    def _report_error(self, error: Any, turn: int | None) -> None:
        if "error" in self._subs:
            self._notices.append(("error", LiveNotice("error", error=error, turn=turn)))
            self._drain()

    async def _session_start(self, source: str) -> None:
        try:
            for listener in self.hooks.session_start.listeners:
                await listener(SessionStart(self, source))
        except Exception as exc:
            log.exception("nbagent session_start listener failed")
            self._report_error(exc, None)
