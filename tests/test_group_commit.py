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


def run_round(agent: nbagent.Agent, store: HeldFirstWrite) -> dict[str, BaseException | None]:
    """One inject leads a held write; ``WAITING`` others stage behind it; then the write goes on."""
    journal = agent.driver.journal
    outcomes: dict[str, BaseException | None] = {}

    def inject(text: str) -> None:
        try:
            agent.inject(text)
        except BaseException as exc:  # collected and asserted on by the test
            outcomes[text] = exc
        else:
            outcomes[text] = None

    first = threading.Thread(target=inject, args=("first",))
    first.start()
    assert store.reached.wait(60)
    others = [threading.Thread(target=inject, args=(f"waiting {i}",)) for i in range(WAITING)]
    for thread in others:
        thread.start()
    deadline = time.monotonic() + 60
    while len(journal._staged) < WAITING:  # every one staged behind the held write
        assert time.monotonic() < deadline, "the waiting injects were never staged"
        time.sleep(0.005)
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


@pytest.fixture(autouse=True)
def _no_leftover_threads():
    before = set(threading.enumerate())
    yield
    assert not [t for t in threading.enumerate() if t not in before and t.name.startswith("Thread-")]
