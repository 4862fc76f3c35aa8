"""One write, one transaction, whatever its size (SPEC §6.2): a write of up to
``ROWS_PER_STATEMENT`` events is a single ``INSERT`` (its own transaction); a longer one is
``BEGIN IMMEDIATE``, one ``INSERT`` per chunk, ``COMMIT``. Either lands whole or not at all."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import nbagent
from nbagent.core.inbox import PlannedSplice, plan_splice
from nbagent.errors import SessionWriteError
from nbagent.log.messages import UserMessage
from nbagent.store.sqlite.store import ROWS_PER_STATEMENT


def insert_many(agent: nbagent.Agent, count: int) -> list[PlannedSplice]:
    """``count`` splices (each one injected message) planned together: one submit, one write."""

    def plan(state):  # type: ignore[no-untyped-def]
        out = []
        for i in range(count):
            splice = plan_splice(state, "next-step", len(state.next_step), 0, (UserMessage.text(f"m{i}"),))
            assert splice is not None
            out.append(splice)
            state = splice.after
        return out

    return agent.driver.mutate(plan)


SIZES = [1, ROWS_PER_STATEMENT, ROWS_PER_STATEMENT + 1, 2 * ROWS_PER_STATEMENT + 17]


@pytest.mark.parametrize("count", SIZES)
async def test_a_write_of_any_size_is_one_transaction(tmp_path: Path, count: int) -> None:
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite")
    store = agent.driver.journal.file
    commits: list[str] = []

    def trace(sql: str) -> None:
        statement = sql.strip().upper()
        if statement == "COMMIT" or (statement.startswith("INSERT") and not store.connection.in_transaction):
            commits.append(statement[:20])

    store.connection.set_trace_callback(trace)
    insert_many(agent, count)
    store.connection.set_trace_callback(None)
    assert len(commits) == 1
    assert len(agent.inbox.next_step) == count
    await agent.close()
    resumed = nbagent.resume_session(agent.path, agent.session_id)
    assert resumed.events == agent.events
    await resumed.close()


@pytest.mark.parametrize("count", SIZES[1:])
async def test_a_write_failing_at_its_last_row_records_none_of_it(tmp_path: Path, count: int) -> None:
    """Another connection holds the seq the write's last row needs: the write fails as a whole,
    memory and disk stay at what was committed, and the session goes on."""
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite")
    agent.inject("before")
    before = agent.events
    blocker = sqlite3.connect(agent.path, isolation_level=None)
    last_seq = agent.driver.journal.next_seq + count - 1
    blocker.execute(
        "INSERT INTO events VALUES (?, ?, 0, 'test/blocker', '{}', NULL)", (agent.session_id, last_seq)
    )
    with pytest.raises(SessionWriteError, match="nothing was recorded"):
        insert_many(agent, count)
    assert agent.events == before
    assert [m.plain_text for m in agent.inbox.next_step] == ["before"]
    on_disk = blocker.execute(
        "SELECT count(*) FROM events WHERE session_id = ? AND type != 'test/blocker'", (agent.session_id,)
    ).fetchone()[0]
    assert on_disk == len(before)
    blocker.execute("DELETE FROM events WHERE type = 'test/blocker'")
    blocker.close()
    insert_many(agent, count)  # the same write once the seq is free
    assert len(agent.inbox.next_step) == count + 1
    await agent.close()
    resumed = nbagent.resume_session(agent.path, agent.session_id)
    assert resumed.events == agent.events
    await resumed.close()
