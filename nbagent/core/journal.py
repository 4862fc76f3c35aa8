"""The append path: seq and time assignment, group commit, the committed inbox projection.

Callers on any thread submit a *build* function that plans events against the staged state under
the journal's lock. Staging is all-or-nothing: a plan is validated and encoded before ``seq``, the
staged inbox or any counter moves, so a value the log cannot store is refused with nothing
consumed. One caller at a time (the leader) writes every staged event in a single SQLite
transaction while others keep staging; followers wait for their batch.

Two kinds of change are staged. A caller's change (:meth:`Journal.submit`) is committed before the
call returns; if the write carrying it fails, that call raises and its change is dropped. The
driver's own changes (:meth:`Journal.stage`) wait for the driver's next commit; a failed write
never drops them: they are planned again on what is durable and go out with the next write (or,
when the session stops after a failure, the log on disk simply ends before them, which resume
repairs). Nothing staged is ever dropped silently.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nbagent import _json
from nbagent.core.inbox import InboxState
from nbagent.core.notices import Notice
from nbagent.core.ports import SessionFile
from nbagent.errors import SessionClosedError, SessionLockedError, SessionWriteError
from nbagent.log.events import Event, Record, Splice


@dataclass(slots=True)
class Plan:
    """What a build function returns: drafts to append and notices for after the commit."""

    drafts: list[Record] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    inbox: InboxState | None = None
    """The staged inbox after these drafts, when they splice it (the state after the last splice)."""
    result: Any = None
    """What the submitting call returns once the plan is durable (e.g. the removed messages)."""


Build = Callable[[InboxState], Plan]


class Ticket:
    """One staged change: how to plan it, its planned events, and who waits for it."""

    __slots__ = (
        "build",
        "done",
        "drafts",
        "encoded",
        "error",
        "events",
        "gate",
        "inbox",
        "marker",
        "next",
        "notices",
        "pending",
        "records",
        "result",
        "waiting",
    )

    def __init__(
        self, build: Build | None, waiting: bool, *, drafts: list[Record] | None = None, marker: bool = False
    ) -> None:
        self.build = build
        """Plans the change against the staged inbox; ``None`` for ``drafts`` that do not need it."""
        self.drafts = drafts
        self.waiting = waiting
        """A caller waits for this change: it fails with the write that carries it. The driver's
        staged changes do not wait: a failed write leaves them staged for its next commit."""
        self.marker = marker
        """The driver's commit of what it staged: done once everything staged before it is durable."""
        self.events: list[Event] = []
        self.records: list[Record] = []
        self.pending: list[int | None] = []
        """Per event: how many messages are pending after it, for a splice (stored with its row)."""
        self.notices: list[Notice] = []
        self.encoded: list[str] = []
        self.inbox: InboxState | None = None
        self.result: Any = None
        self.done = False
        self.error: BaseException | None = None
        self.gate: threading.Lock | None = None
        """A held lock while a caller waits for this ticket: released to wake that caller alone
        (under the journal's lock, or by the caller before it in its write's chain), which then
        needs neither the journal's lock nor any shared lock."""
        self.next: Ticket | None = None
        """The next ticket of the same write whose caller waits: this ticket's caller wakes it on
        its way out (see :meth:`Journal._wake_finished`)."""

    def open_gate(self) -> None:
        """Wake the caller waiting for this ticket (finished, or to lead the next write); once."""
        gate = self.gate
        if gate is not None:
            self.gate = None
            gate.release()


WRITES_PER_LEAD = 3
"""How many transactions one caller writes in a row while others keep staging, before it returns."""


def _ticket(change: Build | list[Record], waiting: bool) -> Ticket:
    return Ticket(None, waiting, drafts=change) if isinstance(change, list) else Ticket(change, waiting)


def _encode(type_: str, data: Any) -> str:
    try:
        return _json.dumps(data)
    except TypeError as exc:  # orjson: lone surrogates, ints beyond 64 bits, nesting, odd types
        raise ValueError(f"the {type_} event cannot be stored ({exc}); nothing was recorded") from None


class Journal:
    """Owns the session's seq counter, the staged and committed inbox, and the group commit."""

    def __init__(
        self,
        *,
        file: SessionFile | None,
        session_id: str,
        next_seq: int,
        last_time: int,
        inbox: InboxState,
        on_commit: Callable[[Sequence[Event], Sequence[Record]], None],
        publish: Callable[[list[Notice]], None],
    ) -> None:
        self.file = file
        self.session_id = session_id
        self._lock = threading.Lock()
        self._next_seq = self._committed_seq = next_seq
        self._last_time = last_time
        self.staged_inbox = self.inbox = inbox
        self._staged: list[Ticket] = []
        self._writing = False
        self._in_flight: list[Ticket] = []
        """The batch being written (no longer staged, not yet committed)."""
        self._lost: BaseException | None = None
        """A driver change that could not be planned again after a failed write (raised by its next commit)."""
        self._closed = False
        """Set by :meth:`close`: every later change is refused, and nothing touches the store."""
        self._on_commit = on_commit
        self._publish = publish
        self.publish_events = False
        """Whether anyone listens to ``"event"`` notices (set by the agent; skips work when not)."""

    @property
    def committed(self) -> int:
        """How many events are durable."""
        return self._committed_seq

    @property
    def next_seq(self) -> int:
        """The seq the next staged event gets."""
        return self._next_seq

    def has_staged(self) -> bool:
        """Whether anything is staged or being written (a commit would have something to wait for)."""
        return bool(self._staged) or self._writing or self._lost is not None

    def with_uncommitted(self, read: Callable[[list[Record]], Any]) -> Any:
        """``read(records)`` with the records staged or being written (not yet committed, in seq
        order), under the lock: nothing commits meanwhile, so what ``read`` sees of the committed
        projections and these records adds up to the log as it will be."""
        with self._lock:
            return read([r for t in (*self._in_flight, *self._staged) for r in t.records])

    # -- the two kinds of change ----------------------------------------------------------------

    def submit(self, build: Build) -> Any:
        """A caller's change: plan with ``build`` on the staged state, commit it, return its result.

        Raises what ``build`` raises, ``ValueError`` for a value the log cannot store (nothing
        recorded, nothing consumed), or :class:`SessionWriteError` when the write fails.
        """
        self._lock.acquire()
        try:
            self._check_open()
            ticket = Ticket(build, waiting=True)
            staged = self._stage(ticket)
        except BaseException:
            self._lock.release()
            raise
        if not staged:
            self._lock.release()
            return ticket.result
        self._await(ticket)
        return ticket.result

    def stage(self, build: Build | list[Record]) -> None:
        """The driver's change, committed by the driver's next :meth:`commit` (or anyone's write)."""
        with self._lock:
            self._check_open()
            self._stage(_ticket(build, False))

    def commit(self, build: Build | list[Record] | None = None, *, only_if_planned: bool = False) -> Any:
        """The driver's commit: everything staged so far (plus ``build``) is durable on return.

        With ``only_if_planned``, a ``build`` that plans nothing commits nothing either: what the
        driver staged waits for its next commit (a step boundary with nothing to claim is no
        external effect, so it costs no transaction).

        On a failed write the driver's staged changes stay staged (they go out with its next
        commit), ``build``'s own change is dropped, and :class:`SessionWriteError` is raised.
        """
        self._lock.acquire()
        try:
            ticket = self._commit_ticket(build, only_if_planned)
        except BaseException:
            self._lock.release()
            raise
        if ticket is None or not ticket.waiting:  # nothing to write (``ticket`` holds the result)
            self._lock.release()
            return None if ticket is None else ticket.result
        self._await(ticket)
        return ticket.result

    def _commit_ticket(self, build: Build | list[Record] | None, only_if_planned: bool) -> Ticket | None:
        """The ticket :meth:`commit` waits for (staged), or one not waiting that holds the result."""
        self._check_open()
        if self._lost is not None:
            lost, self._lost = self._lost, None
            raise lost
        if build is not None:
            ticket = _ticket(build, True)
            if self._stage(ticket):
                return ticket
            if only_if_planned:
                ticket.waiting = False
                return ticket
        if not self._staged and not self._writing:
            return None
        # Done once everything before it is durable, including a batch another caller is writing
        # right now (it may carry the driver's staged events).
        ticket = Ticket(None, True, drafts=[], marker=True)
        self._staged.append(ticket)
        return ticket

    def close(self) -> BaseException | None:
        """Refuse every later change, then write what is staged; return that write's error, if any.

        On return no write is in progress and none can start, so the store can be closed: a
        delivery racing the close was either recorded or raises :class:`SessionClosedError`. When
        the last write fails, the callers waiting for it get its error and the driver's staged
        events are dropped (the log on disk ends before them, which resume repairs).
        """
        error: BaseException | None = None
        with self._lock:
            self._closed = True
            while self._staged or self._writing:
                marker = Ticket(None, True, drafts=[], marker=True)
                self._staged.append(marker)
                try:
                    self._await(marker)  # releases the lock
                except BaseException as exc:
                    self._lock.acquire()
                    error = exc
                    self._fail_staged(exc)
                else:
                    self._lock.acquire()
            self._lost = None
        return error

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(
                f"session {self.session_id} is closed; resume it with nbagent.resume_session()"
            )

    def _fail_staged(self, error: BaseException) -> None:
        """Finish everything staged with ``error`` (nothing of it is written); back to the durable state."""
        for ticket in self._staged:
            ticket.error = ticket.error or error
            ticket.done = True
            ticket.open_gate()
        self._staged = []
        self.staged_inbox = self.inbox
        self._next_seq = self._committed_seq

    def discard_staged(self, cause: BaseException | None = None) -> None:
        """Forget the driver's staged changes (the session stopped after a failed write, ``cause``)."""
        with self._lock:
            for ticket in self._staged:
                ticket.error = ticket.error or SessionWriteError(
                    "the session stopped before this was written"
                    + (f" ({cause})" if cause is not None else "")
                )
                ticket.done = True
                ticket.open_gate()
            self._staged = []
            self._lost = None
            self.staged_inbox = self.inbox
            self._next_seq = self._committed_seq

    # -- staging ----------------------------------------------------------------------------------

    def _stage(self, ticket: Ticket) -> bool:
        """Plan, validate and encode ``ticket``; only then advance seq, time and the staged inbox.

        Returns ``False`` (staging nothing) when the plan has no drafts.
        """
        if ticket.build is None:
            drafts = ticket.drafts or []
            plan_inbox = None
            notices: list[Notice] = []
        else:
            plan = ticket.build(self.staged_inbox)
            ticket.result = plan.result
            drafts, plan_inbox, notices = plan.drafts, plan.inbox, plan.notices
        if not drafts:
            return False
        datas = [d.to_json() for d in drafts]
        encoded: list[str] = []
        if self.file is not None:  # (a session kept in memory only stores nothing, so encodes nothing)
            dumps = _json.dumps
            try:
                encoded = [dumps(data) for data in datas]
            except TypeError:
                encoded = [_encode(d.type, data) for d, data in zip(drafts, datas)]  # names the bad event
        now = time.time_ns() // 1_000_000
        if now < self._last_time:
            now = self._last_time
        seq = self._next_seq
        events = [Event(seq + i, now, d.type, data) for i, (d, data) in enumerate(zip(drafts, datas))]
        pending = self._pending_after(drafts) if self.file is not None else []
        # Nothing above changed the journal: from here on nothing can fail.
        ticket.events = events
        ticket.records = drafts
        ticket.pending = pending
        ticket.notices = notices
        ticket.encoded = encoded
        ticket.inbox = plan_inbox
        self._last_time = now
        self._next_seq = seq + len(events)
        if plan_inbox is not None:
            self.staged_inbox = plan_inbox
        self._staged.append(ticket)
        return True

    def _pending_after(self, drafts: list[Record]) -> list[int | None]:
        """Per draft, how many messages are pending after it if it is a splice (its row stores it)."""
        out: list[int | None] = []
        count = self.staged_inbox.pending
        for d in drafts:
            if type(d) is Splice:
                count += len(d.inserted) - d.removed_count
                out.append(count)
            else:
                out.append(None)
        return out

    # -- writing ----------------------------------------------------------------------------------

    def _await(self, ticket: Ticket) -> None:
        """Until ``ticket`` is done: lead a write when none is in progress, else wait at its gate.

        Called with the journal's lock held; returns (or raises the ticket's error) with it released.
        A caller finished by someone else's write returns without taking the lock again.
        """
        locked = True
        try:
            while not ticket.done:
                if not self._writing:
                    self._write_staged()
                    continue
                gate = threading.Lock()
                gate.acquire()
                ticket.gate = gate
                self._lock.release()
                locked = False
                try:
                    gate.acquire()  # opened when the ticket is finished, or for it to lead the next write
                except BaseException:  # interrupted while waiting: keep the wake-up chain whole
                    self._leave(ticket)
                    raise
                if ticket.done:
                    self._pass_on(ticket)
                    break
                self._lock.acquire()
                locked = True
        finally:
            if locked:
                self._lock.release()
        if ticket.error is not None:
            raise ticket.error

    @staticmethod
    def _pass_on(ticket: Ticket) -> None:
        """Wake the caller after ``ticket``'s in its write's chain (its ``next`` was set, under the
        lock, before ``ticket``'s gate opened)."""
        following, ticket.next = ticket.next, None
        if following is not None:
            following.open_gate()

    def _leave(self, ticket: Ticket) -> None:
        """A caller stops waiting for ``ticket`` (an exception such as ``KeyboardInterrupt`` reached
        it at its gate): once finished, it passes the chain on; before that, it leaves the chain."""
        with self._lock:
            if ticket.done:
                self._pass_on(ticket)
            else:
                ticket.gate = None  # nobody to wake: the write finishing it links past it
                if not self._writing:  # it may have been woken to lead: another caller leads
                    for waiting in self._staged:
                        if waiting.gate is not None:
                            waiting.open_gate()
                            break

    def _write_staged(self, rounds: int = WRITES_PER_LEAD) -> None:
        """Write everything staged in one transaction (the lock released meanwhile), then finish it;
        up to ``rounds`` times while more is staged."""
        self._writing = True
        batch, self._staged = self._staged, []
        self._in_flight = batch
        rows = self._rows(batch) if self.file is not None else []
        self._lock.release()
        error: BaseException | None = None
        try:
            if self.file is not None and rows:
                self.file.write(rows)
        except BaseException as exc:
            error = exc
        finally:
            self._lock.acquire()
        self._writing = False
        self._in_flight = []
        if error is None:
            self._commit(batch)
            finished = batch
        else:
            finished = self._recover(batch, error)
        self._wake_finished(finished)
        # What was staged meanwhile goes out next: written by this caller, already running, for a
        # few rounds (waking a waiter to write it would put a thread's wake-up between every two
        # writes), then by one of its own callers. After a failed write this caller returns at once
        # with its error; a staged caller leads the next write.
        if self._staged:
            if rounds > 1 and error is None:
                self._write_staged(rounds - 1)
                return
            for waiting in self._staged:
                if waiting.gate is not None:
                    waiting.open_gate()
                    break

    @staticmethod
    def _wake_finished(finished: list[Ticket]) -> None:
        """Wake the waiting callers of ``finished`` one after another: the first now, each of the
        others by the caller before it, on its way out (:meth:`_pass_on`). Woken together, they
        would all queue for the GIL at once, and each would sleep and wake twice; in a chain, each
        wakes when the one before it runs, about when the GIL is next free."""
        first: Ticket | None = None
        last: Ticket | None = None
        for ticket in finished:
            if ticket.gate is None:  # the writer's own ticket, or the driver's staged changes
                continue
            if last is None:
                first = ticket
            else:
                last.next = ticket
            last = ticket
        if first is not None:
            first.open_gate()

    def _rows(self, batch: list[Ticket]) -> list[tuple[Any, ...]]:
        sid = self.session_id
        rows = []
        for ticket in batch:
            for ev, pending, encoded in zip(ticket.events, ticket.pending, ticket.encoded):
                rows.append((sid, ev.seq, ev.time, ev.type, encoded, pending))
        return rows

    def _commit(self, batch: list[Ticket]) -> None:
        notices: list[Notice] = []
        try:
            for ticket in batch:
                if ticket.events:
                    if ticket.inbox is not None:
                        self.inbox = ticket.inbox
                    self._committed_seq = ticket.events[-1].seq + 1
                    self._on_commit(ticket.events, ticket.records)
                    if self.publish_events:
                        notices.extend(("event", ev) for ev in ticket.events)
                    notices.extend(ticket.notices)
            if notices:
                self._publish(notices)
        finally:
            # Last: a caller that sees ``done`` (it reads it without the lock) sees all of the above.
            for ticket in batch:
                ticket.done = True

    def _recover(self, batch: list[Ticket], error: BaseException) -> list[Ticket]:
        """After a failed write: fail its waiting callers; plan everything else again, in order.

        The driver's staged changes in ``batch`` and every change staged during the write are
        planned again on the durable state. A caller whose change cannot be planned again gets
        that error (or, when its change has become empty, its new result); a driver change that
        cannot is remembered and fails the driver's next commit. Returns the finished tickets.
        """
        if not isinstance(error, SessionWriteError | SessionLockedError):  # a lost lease says so
            error = SessionWriteError(f"writing the session log failed: {error!r}; nothing was recorded")
        finished: list[Ticket] = []
        again: list[Ticket] = []
        for ticket in batch:
            if ticket.waiting:
                ticket.error, ticket.done = error, True
                finished.append(ticket)
            else:
                again.append(ticket)
        again += self._staged
        self._staged = []
        self.staged_inbox = self.inbox
        self._next_seq = self._committed_seq
        for ticket in again:
            if ticket.marker:
                self._staged.append(ticket)
                continue
            try:
                staged = self._stage(ticket)
            except Exception as exc:
                staged = False
                if ticket.waiting:
                    ticket.error = exc
                else:
                    self._lost = SessionWriteError(
                        f"a change the turn had staged could not be recorded after a failed write ({exc})"
                    )
            if not staged:
                ticket.done = True
                finished.append(ticket)
        return finished
