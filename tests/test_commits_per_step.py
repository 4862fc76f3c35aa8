"""One durable commit per external effect (SPEC §6.2), counted through the store on both stores.

Every transaction the session writes is recorded with the event types it carries. A step with a
tool call commits twice (before its request, before the tool body); a text step commits before its
request and the turn's end carries its answer. A step boundary with nothing to claim is no external
effect and commits nothing. Streamed chunks may be flushed on their own after 100 ms (SPEC §6.2), so
chunk-only transactions are set aside and chunks are left out of the groups compared.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from eventtrace import run

import nbagent
import nbagent.store.sqlite.store
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.testing import check_invariants

pytestmark = pytest.mark.stores

CHUNK = "assistant/chunk"

TOOL_STEP = [
    ["step/start", "user/message", "request/header", "request/estimate"],  # before the first request
    ["assistant/message", "tool/call"],  # before the tool body runs
]
TEXT_STEP_AND_END = [
    ["tool/result", "step/end", "step/start", "request/estimate"],  # before the 2nd request: no claim
    ["assistant/message", "step/end", "turn/end"],
]


@nbagent.tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def script(turns: int) -> ScriptedModel:
    responses: list[Any] = []
    for _ in range(turns):
        responses += [Response(tool_calls=[ToolCall("lookup", {"key": "k"})]), "done"]
    return ScriptedModel(responses)


class CommitLog:
    """Records each transaction the store writes (the event types it carries); on SQLite it also
    counts the transactions the connection commits (``COMMIT`` statements, and statements run
    outside a transaction), so a write that committed more than once would show."""

    def __init__(self, agent: nbagent.Agent) -> None:
        self.writes: list[list[str]] = []
        self.sql_commits = 0
        self._lock = threading.Lock()
        store = agent.driver.journal.file
        assert store is not None
        real_write = store.write

        def write(rows: Any, **kw: Any) -> None:
            real_write(rows, **kw)
            with self._lock:
                self.writes.append([row[3] for row in rows])

        store.write = write  # an instance attribute: the journal calls it for every transaction
        connection = self._connection = getattr(store, "connection", None)
        if connection is not None:  # SQLite
            connection.set_trace_callback(self._trace)

    def _trace(self, sql: str) -> None:
        # A transaction ends in COMMIT, or is one INSERT run outside any (SQLite commits it itself).
        statement = sql.strip().upper()
        if statement == "COMMIT" or (statement.startswith("INSERT") and not self._connection.in_transaction):
            self.sql_commits += 1

    def take(self) -> list[list[str]]:
        """The transactions so far (chunk-only ones set aside, chunks left out), then forget them."""
        with self._lock:
            writes, self.writes = self.writes, []
        return [[t for t in w if t != CHUNK] for w in writes if any(t != CHUNK for t in w)]


async def tool_then_text_turns(db: Any, *, from_thread: bool) -> list[list[list[str]]]:
    """Three turns of a tool step and a text step; each turn's transactions (see ``CommitLog.take``)."""
    model = script(3)
    agent = nbagent.open_session(db, model=model, tools=[lookup])
    log = CommitLog(agent)
    turns = []
    writes = 0
    for n in range(3):
        if from_thread:
            await asyncio.to_thread(agent.followup, f"go {n}")
        else:
            agent.followup(f"go {n}")
        await agent.when_idle()
        writes += len(log.writes)
        turns.append(log.take())
    if agent.driver.journal.file.__class__.__name__ == "SessionFile":
        assert log.sql_commits == writes  # each write is exactly one SQLite transaction
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()
    return turns


def expected_turn(first: bool) -> list[list[str]]:
    """The followup's own commit, the turn's opening (SPEC §3.2: durable when ``followup()`` returns
    on the loop thread), then two commits per step."""
    step_one = [list(TOOL_STEP[0]), list(TOOL_STEP[1])]
    if not first:
        step_one[0].remove("request/header")  # the header is written only when new or changed
    return [["agent/inbox/spliced"], ["turn/start", "agent/inbox/spliced"], *step_one, *TEXT_STEP_AND_END]


@pytest.mark.parametrize("from_thread", [False, True], ids=["loop-thread", "worker-thread"])
def test_a_tool_step_and_a_text_step_commit_twice_each(db, from_thread):
    turns = run(tool_then_text_turns(db, from_thread=from_thread))
    for n, commits in enumerate(turns):
        assert commits == expected_turn(n == 0), f"turn {n + 1}"


@pytest.mark.sqlite_only
def test_commit_count_is_the_same_with_synchronous_normal(db, monkeypatch):
    monkeypatch.setattr(nbagent.store.sqlite.store, "SYNCHRONOUS", "NORMAL")

    async def check_pragma() -> int:
        agent = nbagent.open_session(db)
        level = agent.driver.journal.file.connection.execute("PRAGMA synchronous").fetchone()[0]
        await agent.close()
        return level

    assert run(check_pragma()) == 1  # NORMAL
    turns = run(tool_then_text_turns(db, from_thread=False))
    for n, commits in enumerate(turns):
        assert commits == expected_turn(n == 0), f"turn {n + 1}"


def test_steering_claimed_at_a_later_boundary_is_committed_with_it(db):
    """A non-empty claim at a later boundary is still durable before the next request."""

    async def main() -> list[list[str]]:
        box: list[nbagent.Agent] = []

        @nbagent.tool
        def steer_me() -> str:
            """Steers the running turn."""
            box[0].steer("also this")
            return "ok"

        model = ScriptedModel([Response(tool_calls=[ToolCall("steer_me")]), "done"])
        agent = nbagent.open_session(db, model=model, tools=[steer_me])
        box.append(agent)
        log = CommitLog(agent)
        agent.followup("go")
        await agent.when_idle()
        check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
        await agent.close()
        return log.take()

    commits = run(main())
    assert commits[:4] == expected_turn(True)[:4]
    assert commits[4] == ["agent/inbox/spliced"]  # the steer: durable before steer() returned
    boundary = commits[5:-1]  # the results, the claim of the steer and the second step's start
    assert boundary in (
        [
            ["tool/result", "step/end", "agent/inbox/spliced"],
            ["step/start", "user/message", "request/estimate"],
        ],
        [
            [
                "tool/result",
                "step/end",
                "agent/inbox/spliced",
                "step/start",
                "user/message",
                "request/estimate",
            ]
        ],
    )
    assert commits[-1] == ["assistant/message", "step/end", "turn/end"]
