"""Concurrent callers share commits (issue #20 item 3, SPEC §6.2): callers staged while a write is in
progress go out together in the next transaction, each returning once its own change is durable;
when that shared write fails, exactly its callers fail, with nothing of theirs recorded."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import nbagent
from nbagent.errors import SessionWriteError

WAITING = 6
"""Callers that stage behind the held first write."""


class HeldFirstWrite:
    """The session's real store: the first write waits for the test; writes are recorded by row."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.reached = threading.Event()
        self.go_on = threading.Event()
        self.fail_call: int | None = None
        """The write call (counted from 0) that fails, if any."""
        self.calls = 0
        self.writes: list[list[str]] = []

    def write(self, rows: Any, **kwargs: Any) -> None:
        texts = [row[4] for row in rows]
        if not self.reached.is_set():
            self.reached.set()
            assert self.go_on.wait(60), "the test never let the first write go on"
        call, self.calls = self.calls, self.calls + 1
        if call == self.fail_call:
            raise SessionWriteError("the test's store refused this write; nothing was recorded")
        self.store.write(rows, **kwargs)
        self.writes.append(texts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def run_round(
    agent: nbagent.Agent, store: HeldFirstWrite, gates: Gates | None = None
) -> dict[str, BaseException | None]:
    """One inject leads a held write; ``WAITING`` others stage behind it; then the write goes on
    (after ``gates``, if given, picks the caller to interrupt: the third staged)."""
    journal = agent.driver.journal
    outcomes: dict[str, BaseException | None] = {}

    def inject(text: str) -> None:
        try:
            agent.inject(text)
        except BaseException as exc:  # collected and asserted on by the test
            outcomes[text] = exc
        else:
            outcomes[text] = None

    first = threading.Thread(target=inject, args=("first",), name="first")
    first.start()
    assert store.reached.wait(60)
    others = [
        threading.Thread(target=inject, args=(f"waiting {i}",), name=f"waiting {i}") for i in range(WAITING)
    ]
    for thread in others:
        thread.start()
    deadline = time.monotonic() + 60
    while len(journal._staged) < WAITING:  # every one staged behind the held write
        assert time.monotonic() < deadline, "the waiting injects were never staged"
        time.sleep(0.005)
    if gates is not None:
        gates.victim = journal._staged[2].gate.owner
        if gates.interrupt == "waiting":  # interrupted before its write goes on
            assert gates.raised.wait(60)
    store.go_on.set()
    for thread in (first, *others):
        thread.join(60)
        assert not thread.is_alive(), "an inject never returned"
    return outcomes


def inbox_texts(agent: nbagent.Agent) -> list[str]:
    return [m.content[0]["text"] for m in agent.inbox.next_step]


async def test_callers_staged_during_a_write_share_the_next_transaction(tmp_path):
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite")
    store = agent.driver.journal.file = HeldFirstWrite(agent.driver.journal.file)
    outcomes = await asyncio.to_thread(run_round, agent, store)
    assert outcomes == {text: None for text in ["first", *(f"waiting {i}" for i in range(WAITING))]}
    assert [len(rows) for rows in store.writes] == [1, WAITING]  # the six waiting callers: one write
    assert inbox_texts(agent)[0] == "first"
    assert sorted(inbox_texts(agent)[1:]) == sorted(f"waiting {i}" for i in range(WAITING))
    await agent.close()
    resumed = nbagent.resume_session(agent.path, agent.session_id)
    assert resumed.events == agent.events
    await resumed.close()


async def test_a_failed_shared_write_fails_exactly_its_callers(tmp_path):
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite")
    store = agent.driver.journal.file = HeldFirstWrite(agent.driver.journal.file)
    store.fail_call = 1  # the held first write succeeds; the shared second one fails
    outcomes = await asyncio.to_thread(run_round, agent, store)
    assert outcomes.pop("first") is None
    assert len(outcomes) == WAITING
    for error in outcomes.values():
        assert isinstance(error, SessionWriteError), outcomes
    assert inbox_texts(agent) == ["first"]  # nothing of the failed callers is pending or recorded
    agent.inject("after the failure")
    assert inbox_texts(agent) == ["first", "after the failure"]
    await agent.close()
    resumed = nbagent.resume_session(agent.path, agent.session_id)
    assert resumed.events == agent.events
    assert [m.content[0]["text"] for m in resumed.inbox.next_step] == ["first", "after the failure"]
    await resumed.close()


class Gate:
    """A waiting caller's gate (the journal's ``threading.Lock``), recording who opens it; the
    caller ``Gates.victim`` is interrupted at its wait, as a signal's ``KeyboardInterrupt`` would."""

    def __init__(self, gates: Gates) -> None:
        self.gates = gates
        self.lock = threading.Lock()
        self.owner = threading.current_thread().name

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self.lock.locked():  # the journal closing its new gate
            return self.lock.acquire(blocking, timeout)
        while not self.lock.acquire(timeout=0.01):  # the wait: until opened, or interrupted
            if self.gates.interrupt == "waiting" and self.gates.victim == self.owner:
                self.gates.raised.set()
                raise KeyboardInterrupt
        if self.gates.interrupt == "woken" and self.gates.victim == self.owner:
            raise KeyboardInterrupt
        return True

    def release(self) -> None:
        self.gates.opened_by.append(threading.current_thread().name)
        self.lock.release()


class Gates:
    """Stands in for ``threading`` in the journal's module while its gates are watched."""

    def __init__(self, interrupt: str | None = None) -> None:
        self.interrupt = interrupt
        self.victim: str | None = None
        self.opened_by: list[str] = []
        self.raised = threading.Event()

    def Lock(self) -> Gate:
        return Gate(self)


async def test_the_callers_of_a_shared_write_wake_one_after_another(tmp_path, monkeypatch):
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite")
    store = agent.driver.journal.file = HeldFirstWrite(agent.driver.journal.file)
    gates = Gates()
    monkeypatch.setattr("nbagent.core.journal.threading", gates)
    outcomes = await asyncio.to_thread(run_round, agent, store, None)
    assert set(outcomes.values()) == {None}
    assert [len(rows) for rows in store.writes] == [1, WAITING]
    # The writer wakes the first of its callers only; each woken caller wakes the next.
    assert len(gates.opened_by) == WAITING
    assert gates.opened_by.count("first") == 1
    assert all(gates.opened_by.count(name) <= 1 for name in set(gates.opened_by))
    monkeypatch.undo()
    await agent.close()


@pytest.mark.parametrize("interrupt", ["waiting", "woken"])
async def test_a_caller_interrupted_at_its_gate_strands_nobody(tmp_path, monkeypatch, interrupt):
    """``KeyboardInterrupt`` at a gate, before or as the caller's write finished: every other
    caller still returns, and what each staged is recorded once."""
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite")
    store = agent.driver.journal.file = HeldFirstWrite(agent.driver.journal.file)
    gates = Gates(interrupt)
    monkeypatch.setattr("nbagent.core.journal.threading", gates)
    outcomes = await asyncio.to_thread(run_round, agent, store, gates)
    interrupted = [text for text, error in outcomes.items() if isinstance(error, KeyboardInterrupt)]
    assert interrupted == [gates.victim]
    assert [error for text, error in outcomes.items() if text != gates.victim] == [None] * WAITING
    expected = sorted(["first", *(f"waiting {i}" for i in range(WAITING))])
    assert sorted(inbox_texts(agent)) == expected  # the interrupted caller's change was staged: recorded
    monkeypatch.undo()
    await agent.close()
    resumed = nbagent.resume_session(agent.path, agent.session_id)
    assert sorted(m.content[0]["text"] for m in resumed.inbox.next_step) == expected
    await resumed.close()


@pytest.fixture(autouse=True)
def _no_leftover_threads():
    before = set(threading.enumerate())
    yield
    assert not [t for t in threading.enumerate() if t not in before and t.name.startswith("Thread-")]
