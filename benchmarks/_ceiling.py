"""The ceiling for many writers sharing commits: a minimal group commit with no nbagent in it.

``BareGroupCommit.commit(row)`` is what a writer thread does in the smallest leader/follower design
this benchmark knows, the same as nbagent's journal: append the row under a lock, then either lead
(write everything staged as one ``INSERT`` statement, its own transaction; keep writing what was
staged meanwhile for up to three writes; wake the first caller of each write, each woken caller
waking the next on its way out; hand the lead to the first staged waiter) or wait at a gate of its
own. No planning, no validation, no encoding: run with 16 threads it shows what Python threads on
this machine reach around SQLite at all, beside which the nbagent figure can be read.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

ROW = "(?, ?, ?, ?, ?, ?)"
WRITES_PER_LEAD = 3


class _Waiter:
    __slots__ = ("done", "gate", "next", "row")

    def __init__(self, row: tuple[Any, ...]) -> None:
        self.row = row
        self.done = False
        self.gate: threading.Lock | None = None
        self.next: _Waiter | None = None


class BareGroupCommit:
    """Rows of many threads committed together, each ``commit`` returning once its row is durable."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.lock = threading.Lock()
        self.staged: list[_Waiter] = []
        self.writing = False
        self.transactions = 0

    def commit(self, row: tuple[Any, ...]) -> None:
        me = _Waiter(row)
        self.lock.acquire()
        self.staged.append(me)
        while not me.done:
            if not self.writing:
                self._lead()
                continue
            gate = me.gate = threading.Lock()
            gate.acquire()
            self.lock.release()
            gate.acquire()
            if me.done:
                following = me.next
                if following is not None:
                    self._open(following)
                return
            self.lock.acquire()
        self.lock.release()

    def _lead(self) -> None:
        for _ in range(WRITES_PER_LEAD):
            self._write()
            if not self.staged:
                return
        for waiter in self.staged:  # the first staged waiter leads the next write
            if waiter.gate is not None:
                self._open(waiter)
                break

    def _write(self) -> None:
        self.writing = True
        batch, self.staged = self.staged, []
        self.lock.release()
        try:
            sql = "INSERT INTO events VALUES " + ", ".join([ROW] * len(batch))
            self.conn.execute(sql, [value for w in batch for value in w.row])
        finally:  # on failure too: finish the batch so no thread waits forever; the caller reports it
            self.lock.acquire()
            self.writing = False
            self.transactions += 1
            first = last = None
            for waiter in batch:  # linked first, then the first woken: it reads ``next`` unlocked
                waiter.done = True
                if waiter.gate is not None:
                    if last is None:
                        first = waiter
                    else:
                        last.next = waiter
                    last = waiter
            if first is not None:
                self._open(first)

    @staticmethod
    def _open(waiter: _Waiter) -> None:
        gate, waiter.gate = waiter.gate, None
        if gate is not None:
            gate.release()
