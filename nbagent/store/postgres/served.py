"""A set of members served by one daemon thread per process: the leases the renewer renews, the
followers the listener wakes. The thread starts with the first member; each member added wakes it."""

from __future__ import annotations

import threading
from collections.abc import MutableSet
from typing import Generic, TypeVar

M = TypeVar("M")


class Served(Generic[M]):
    """The members, the condition that guards them and wakes the thread, and the thread running
    :meth:`_run` (which a subclass writes)."""

    def __init__(self, members: MutableSet[M], thread_name: str) -> None:
        self._members = members
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._thread_name = thread_name

    def add(self, member: M) -> None:
        with self._cond:
            self._members.add(member)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._thread_name, daemon=True)
                self._thread.start()
            self._cond.notify()

    def discard(self, member: M) -> None:
        with self._cond:
            self._members.discard(member)

    def _run(self) -> None:
        raise NotImplementedError
