"""The append path: seq and time assignment, group commit, the committed inbox projection.

Callers on any thread submit a *build* function that plans events against the staged state under
the journal's lock. One caller at a time (the leader) writes every staged event in a single SQLite
transaction while others keep staging; followers wait for their batch. A failed write drops every
staged event, resets the staged state to the committed one, and raises to each affected caller, so
memory and disk stay consistent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nbagent import _json
from nbagent._json import FrozenDict
from nbagent.errors import SessionWriteError
from nbagent.events import INBOX_SPLICED, Event
from nbagent.inbox import InboxState
from nbagent.store import SessionFile

Draft = tuple[str, Any, Any]
"""``(type, data, attachment)``: an event to write and its in-memory companion: the Message of a
message event, the ``InboxState`` after a splice, else ``None``."""

Notice = tuple[str, Any]


@dataclass(eq=False, slots=True)
class Ticket:
    """One caller's staged events and the notices to publish once they commit."""

    events: list[Event]
    attachments: list[Any]
    notices: list[Notice]
    encoded: list[str] = field(default_factory=list)
    done: bool = False
    error: BaseException | None = None
    waiter: threading.Condition | None = None
    """Set while a caller waits for this ticket: woken alone, never with every other waiter."""


@dataclass(slots=True)
class Plan:
    """What a build function returns: drafts to append and notices for after the commit."""

    drafts: list[Draft] = field(default_factory=list)
    notices: list[Notice] = field(default_factory=list)
    inbox: InboxState | None = None
    """The staged inbox after these drafts, when they splice it."""


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
        on_commit: Callable[[Sequence[Event], Sequence[Any]], None],
        publish: Callable[[list[Notice]], None],
    ) -> None:
        self.file = file
        self.session_id = session_id
        self._lock = threading.Lock()
        self._next_seq = self._committed_seq = next_seq
        self._last_time = self._committed_time = last_time
        self.staged_inbox = self.inbox = inbox
        self._staged: list[Ticket] = []
        self._writing = False
        self._on_commit = on_commit
        self._publish = publish
        self.publish_events = False
        """Whether anyone listens to ``"event"`` notices (set by the agent; skips work when not)."""

    @property
    def committed(self) -> int:
        """How many events are durable."""
        return self._committed_seq

    def submit(self, build: Callable[[InboxState], Plan], *, flush: bool = True) -> list[Event]:
        """Plan with ``build`` against the staged state, stage, and (by default) commit durably."""
        with self._lock:
            plan = build(self.staged_inbox)
            if not plan.drafts:
                return []
            ticket = self._stage(plan)
            if not flush:
                return ticket.events
            self._flush_locked(ticket)
        return ticket.events

    def append(self, drafts: list[Draft], *, flush: bool = True) -> list[Event]:
        """Stage events that do not depend on the inbox (the driver's own), optionally committing."""
        with self._lock:
            ticket = self._stage(Plan(drafts=drafts))
            if flush:
                self._flush_locked(ticket)
        return ticket.events

    def flush(self) -> None:
        """Commit whatever is staged (e.g. batched chunks)."""
        with self._lock:
            if self._staged:
                self._flush_locked(self._staged[-1])

    def has_staged(self) -> bool:
        return bool(self._staged)

    def _stage(self, plan: Plan) -> Ticket:
        now = int(time.time() * 1000)
        if now < self._last_time:
            now = self._last_time
        self._last_time = now
        seq = self._next_seq
        events = []
        for type_, data, _ in plan.drafts:
            if type(data) is dict:
                data = FrozenDict(data)
            events.append(Event(seq, now, type_, data))
            seq += 1
        self._next_seq = seq
        if plan.inbox is not None:
            self.staged_inbox = plan.inbox
        ticket = Ticket(events, [a for _, _, a in plan.drafts], plan.notices)
        if self.file is not None:
            # Encoded by the caller while a leader may be writing: the leader's lock-free part.
            ticket.encoded = [_json.dumps(ev.data) for ev in events]
        self._staged.append(ticket)
        return ticket

    def _flush_locked(self, ticket: Ticket) -> None:
        while not ticket.done:
            if self._writing:
                if ticket.waiter is None:
                    ticket.waiter = threading.Condition(self._lock)
                ticket.waiter.wait()
                continue
            self._writing = True
            batch, self._staged = self._staged, []
            rows = self._rows(batch) if self.file is not None else []
            self._lock.release()
            error: BaseException | None = None
            try:
                if self.file is not None:
                    self.file.write(rows)
            except BaseException as exc:
                error = exc
            finally:
                self._lock.acquire()
            self._writing = False
            finished = batch
            if error is None:
                self._commit(batch)
            else:
                finished = batch + self._staged  # staged after this batch was planned on it: dropped too
                self._fail(batch, error)
            # Wake the callers of this batch, and one caller of what was staged meanwhile: it leads next.
            for done in finished:
                if done.waiter is not None:
                    done.waiter.notify()
            for waiting in self._staged:
                if waiting.waiter is not None:
                    waiting.waiter.notify()
                    break
        if ticket.error is not None:
            raise ticket.error

    def _rows(self, batch: list[Ticket]) -> list[tuple[Any, ...]]:
        sid = self.session_id
        rows = []
        for ticket in batch:
            for ev, attached, encoded in zip(ticket.events, ticket.attachments, ticket.encoded):
                pending = attached.pending if ev.type == INBOX_SPLICED else None
                rows.append((sid, ev.seq, ev.time, ev.type, encoded, pending))
        return rows

    def _commit(self, batch: list[Ticket]) -> None:
        notices: list[Notice] = []
        for ticket in batch:
            for ev, attached in zip(ticket.events, ticket.attachments):
                if ev.type == INBOX_SPLICED:
                    self.inbox = attached
            last = ticket.events[-1]
            self._committed_seq = last.seq + 1
            self._committed_time = last.time
            self._on_commit(ticket.events, ticket.attachments)
            if self.publish_events:
                notices.extend(("event", ev) for ev in ticket.events)
            notices.extend(ticket.notices)
            ticket.done = True
        if notices:
            self._publish(notices)

    def _fail(self, batch: list[Ticket], error: BaseException) -> None:
        if not isinstance(error, SessionWriteError):
            error = SessionWriteError(f"writing the session log failed: {error!r}; nothing was recorded")
        for ticket in batch + self._staged:
            ticket.done = True
            ticket.error = error
        self._staged = []
        self.staged_inbox = self.inbox
        self._next_seq = self._committed_seq
        self._last_time = self._committed_time
