"""The ceiling for many writers sharing commits: a minimal group commit with no nbagent in it.

``BareGroupCommit.commit(row)`` is what a writer thread does in the smallest leader/follower design
this benchmark knows: append the row under a lock, then either lead (write everything staged in one
``BEGIN IMMEDIATE; executemany; COMMIT``, open the gates of the rows it carried, hand the lead to the
first staged waiter) or wait at a gate of its own. No planning, no validation, no encoding: run with
16 threads it shows what Python threads on this machine reach around SQLite at all, beside which the
nbagent figure (the same design plus ~25 µs of Python per inject) can be read.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

INSERT = "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)"


class _Waiter:
    __slots__ = ("done", "gate", "row")

    def __init__(self, row: tuple[Any, ...]) -> None:
        self.row = row
        self.done = False
        self.gate: threading.Lock | None = None


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
                self._write()
                continue
            gate = me.gate = threading.Lock()
            gate.acquire()
            self.lock.release()
            gate.acquire()
            if me.done:
                return
            self.lock.acquire()
        self.lock.release()

    def _write(self) -> None:
        self.writing = True
        batch, self.staged = self.staged, []
        self.lock.release()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.executemany(INSERT, [w.row for w in batch])
            self.conn.execute("COMMIT")
        except BaseException:  # finish the batch so no thread waits forever; the caller reports it
            with self.lock:
                self.writing = False
                for waiter in batch:
                    waiter.done = True
                    self._open(waiter)
            raise
        self.lock.acquire()
        self.writing = False
        self.transactions += 1
        for waiter in batch:
            waiter.done = True
            self._open(waiter)
        for waiter in self.staged:  # the first staged waiter leads the next write
            if waiter.gate is not None:
                self._open(waiter)
                break

    @staticmethod
    def _open(waiter: _Waiter) -> None:
        gate, waiter.gate = waiter.gate, None
        if gate is not None:
            gate.release()
