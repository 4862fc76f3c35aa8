"""Nothing a caller sends, and no failed write, can break the log (SPEC §2.1, §6.2).

Values the log cannot store are refused before anything is recorded (no seq consumed, the inbox
unchanged); text from outside code is made storable; a failed write fails only its own caller and
never drops what the turn had staged; after a clean close the ``.sqlite`` file alone holds the log.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from eventtrace import trace

import nbagent
from nbagent import SessionWriteError, ToolResult, UserMessage
from nbagent._json import FrozenDict
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.testing import check_invariants


def nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = [value]
    return value


BAD_MESSAGES = [
    pytest.param(
        lambda: UserMessage(content=[{"type": "text", "text": "x", "n": 2**64}]), id="int-beyond-64-bits"
    ),
    pytest.param(
        lambda: UserMessage(content=[{"type": "text", "text": "x", "n": -(2**63) - 1}]), id="int-below"
    ),
    pytest.param(lambda: UserMessage.text("caf\udce9"), id="lone-surrogate-text"),
    pytest.param(lambda: "caf\udce9", id="lone-surrogate-str"),
    pytest.param(
        lambda: UserMessage.text("x", {"kind": "cell", "label": "\ud800"}), id="lone-surrogate-source"
    ),
    pytest.param(
        lambda: UserMessage(content=[{"type": "text", "text": "x", "\udcff": 1}]), id="surrogate-key"
    ),
    pytest.param(
        lambda: UserMessage(content=[{"type": "text", "text": "x", "d": nested(254)}]), id="nest-254"
    ),
    pytest.param(
        lambda: UserMessage(content=[{"type": "text", "text": "x", "d": nested(1000)}]), id="nest-1000"
    ),
    pytest.param(
        lambda: UserMessage.model_construct(
            id="built-around-validation",
            role="user",
            content=(FrozenDict(type="text", text="x", n=2**70),),
            source=FrozenDict(kind="user"),
        ),
        id="unvalidated-frozen-value",
    ),
]


@pytest.mark.parametrize("make", BAD_MESSAGES)
@pytest.mark.parametrize("call", ["inject", "followup", "steer", "append"])
async def test_a_value_the_log_cannot_store_is_refused_with_nothing_consumed(db, make, call):
    agent = nbagent.open_session(db, model=ScriptedModel(["first", "second"]))
    await agent.run("before")
    before = agent.events
    with pytest.raises((TypeError, ValueError)):
        message = make()
        if call == "append":
            agent.inbox.append("next-step", message)
        else:
            getattr(agent, call)(message)
    assert agent.events == before
    assert not agent.inbox.has_pending
    assert agent.status == "idle"
    run = await agent.run("after")  # the next seq follows on: no gap, no phantom message claimed
    assert run.text == "second"
    assert [e.seq for e in agent.events] == list(range(len(agent.events)))
    check_invariants(agent.events, inbox=agent.inbox)
    await agent.close()
    resumed = nbagent.resume_session(db, agent.session_id)
    assert resumed.events == agent.events
    await resumed.close()


def test_values_at_the_bounds_are_stored(db):
    async def main() -> None:
        agent = nbagent.open_session(db)
        edge = UserMessage(
            content=[
                {
                    "type": "text",
                    "text": "caf\u00e9 \U0001f600",
                    "max": 2**63 - 1,
                    "min": -(2**63),
                    "d": nested(190),
                }
            ]
        )
        agent.inject(edge)
        await agent.close()
        (event,) = nbagent.read_events(db, agent.session_id)
        assert event.data["inserted"][0] == edge.to_json()

    asyncio.run(main())


async def test_a_tool_listing_undecodable_file_names_is_stored_with_replacement_characters(db, tmp_path):
    folder = tmp_path / "files"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), "wb"):
        pass  # a Latin-1 name: os.listdir() returns it with a lone surrogate (surrogateescape)

    def names() -> str:
        """Lists the files as text."""
        return "\n".join(os.listdir(folder))

    def listing() -> list[str]:
        """Lists the files as data."""
        return os.listdir(folder)

    model = ScriptedModel(
        [
            Response(tool_calls=[ToolCall("names", {}, id="c1"), ToolCall("listing", {}, id="c2")]),
            Response("seen"),
        ]
    )
    agent = nbagent.open_session(db, model=model, tools=[names, listing])
    run = await agent.run("what files are there?")
    assert run.end["reason"]["kind"] == "completed" and run.text == "seen"
    results = [
        e.data["message"]["content"][0]["content"][0]["text"] for e in agent.events if e.type == "tool/result"
    ]
    assert results == ["caf\ufffd.txt", '[\n  "caf\ufffd.txt"\n]']
    assert "caf\ufffd.txt" in str(model.requests[1].messages[-1].content)
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()
    resumed = nbagent.resume_session(db)
    assert resumed.events == agent.events
    await resumed.close()


async def test_a_stream_that_splits_a_surrogate_pair_is_stored_with_replacement_characters(db):
    model = ScriptedModel([Response("ab\ud83d\ude00cd", chunk_size=3), Response("next")])
    agent = nbagent.open_session(db, model=model)
    run = await agent.run("hi")
    assert run.text == "ab\ufffd\ufffdcd"
    chunks = [
        e.data["chunk"]["text"]
        for e in agent.events
        if e.type == "assistant/chunk" and "text" in e.data["chunk"]
    ]
    assert "".join(chunks) == "ab\ufffd\ufffdcd"
    assert (await agent.run("again")).text == "next"
    await agent.close()
    resumed = nbagent.resume_session(db)
    assert resumed.events == agent.events
    check_invariants(resumed.events)
    await resumed.close()


async def test_a_tool_result_the_log_cannot_store_becomes_an_error_the_model_reads(db):
    def big() -> ToolResult:
        """Returns a number beyond 64 bits inside a block."""
        return ToolResult([{"type": "text", "text": "x", "n": 2**70}])

    def deep() -> ToolResult:
        """Returns a block nested too deeply."""
        return ToolResult([{"type": "text", "text": "x", "d": nested(300)}])

    def odd_context() -> ToolResult:
        """Returns a context message built around validation."""
        bad = UserMessage.model_construct(
            id="ctx",
            role="user",
            content=(FrozenDict(type="text", text="x", n=2**70),),
            source=FrozenDict(kind="plugin"),
        )
        return ToolResult("fine", additional_contexts=[bad])

    calls = [
        ToolCall("big", {}, id="c1"),
        ToolCall("deep", {}, id="c2"),
        ToolCall("odd_context", {}, id="c3"),
    ]
    model = ScriptedModel([Response(tool_calls=calls), Response("read the errors")])
    agent = nbagent.open_session(db, model=model, tools=[big, deep, odd_context])
    run = await agent.run("go")
    assert run.text == "read the errors"
    assert [line for line in trace(agent.events) if line.startswith("TR")] == [
        "TR c1 INVALID_RESULT",
        "TR c2 INVALID_RESULT",
        "TR c3 INVALID_RESULT",
    ]
    seen = model.requests[1].messages[-1].content[0]["content"][0]["text"]
    assert seen.startswith("Error: the tool returned a result the log cannot store")
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()


def parallel_pair(gate: asyncio.Event, fast_done: asyncio.Event) -> list[nbagent.Tool]:
    @nbagent.tool(parallel_safe=True)
    async def fast() -> str:
        """Answers at once."""
        fast_done.set()
        return "fast result"

    @nbagent.tool(parallel_safe=True)
    async def slow() -> str:
        """Answers when the gate opens."""
        await gate.wait()
        return "slow result"

    return [fast, slow]


async def staged_result(agent: nbagent.Agent, fast_done: asyncio.Event) -> None:
    """Wait until the fast tool's result is staged (not yet committed) by the driver."""
    await fast_done.wait()
    while agent.driver.journal.next_seq == agent.driver.committed:
        await asyncio.sleep(0)


async def test_a_full_disk_fails_only_the_write_that_met_it(small_disk):
    """A worker's inject meets a full disk while a finished parallel tool's result is staged: the
    inject raises and records nothing; the tool result survives and is sent to the model."""
    db = small_disk.path / "s.nbagent.sqlite"
    gate, fast_done = asyncio.Event(), asyncio.Event()
    model = ScriptedModel(
        [
            Response(tool_calls=[ToolCall("fast", {}, id="a"), ToolCall("slow", {}, id="b")]),
            Response("both seen"),
        ]
    )
    agent = nbagent.open_session(db, model=model, tools=parallel_pair(gate, fast_done))
    agent.followup("go")
    await staged_result(agent, fast_done)
    small_disk.fill()
    with pytest.raises(SessionWriteError, match="disk is full"):
        await asyncio.to_thread(agent.inject, "context while the disk is full")
    assert not agent.inbox.has_pending
    small_disk.free()
    gate.set()
    await agent.when_idle()
    lines = trace(agent.events)
    assert [x for x in lines if x.startswith(("TR", "TE"))] == ["TR a", "TR b", "TE 1 completed"]
    assert [m.content[0]["tool_call_id"] for m in model.requests[1].messages[-2:]] == ["a", "b"]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    agent.inject("after the disk was freed")
    await agent.close()
    resumed = nbagent.resume_session(db)
    assert resumed.events == agent.events
    await resumed.close()


async def test_a_write_lock_held_past_the_busy_timeout_fails_only_its_caller(db, monkeypatch):
    """Another connection holds the write lock: the inject waiting on it gives up with a clear
    error; the turn's staged result is written by the turn's next commit once the lock is free."""
    monkeypatch.setattr("nbagent.store.sqlite.file_errors.BUSY_TIMEOUT_MS", 200)
    gate, fast_done = asyncio.Event(), asyncio.Event()
    model = ScriptedModel(
        [
            Response(tool_calls=[ToolCall("fast", {}, id="a"), ToolCall("slow", {}, id="b")]),
            Response("both seen"),
        ]
    )
    agent = nbagent.open_session(db, model=model, tools=parallel_pair(gate, fast_done))
    agent.followup("go")
    await staged_result(agent, fast_done)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(SessionWriteError, match="locked"):
        await asyncio.to_thread(agent.inject, "context while the file is locked")
    other.execute("ROLLBACK")
    other.close()
    gate.set()
    await agent.when_idle()
    assert [x for x in trace(agent.events) if x.startswith(("TR", "TE"))] == [
        "TR a",
        "TR b",
        "TE 1 completed",
    ]
    check_invariants(agent.events, inbox=agent.inbox, requests=model.requests)
    await agent.close()
    assert nbagent.read_events(db, agent.session_id) == agent.events


async def test_after_a_clean_close_the_sqlite_file_alone_holds_the_log(db, tmp_path):
    """Even while another process keeps a connection to the file open, a clean close checkpoints
    the WAL: a copy of the ``.sqlite`` alone (as the README names it) holds every event."""

    def tool_step() -> str:
        """A tool."""
        return "tool output"

    model = ScriptedModel(
        [
            Response(tool_calls=[ToolCall("tool_step", {}, id=f"c{i}")])
            if i % 2 == 0
            else Response(f"answer {i}")
            for i in range(6)
        ]
    )
    agent = nbagent.open_session(db, model=model, tools=[tool_step])
    await agent.run("one")
    reader = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sqlite3, sys
                conn = sqlite3.connect("file:{db}?mode=ro", uri=True)
                print(conn.execute("SELECT count(*) FROM events").fetchone()[0], flush=True)
                sys.stdin.readline()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )

    assert (await asyncio.to_thread(reader.stdout.readline)).strip().isdigit()  # the reader is connected
    await agent.run("two")
    await agent.run("three")
    agent.inject("pending context")
    await agent.close()
    copy = tmp_path / "copy" / "only-the-main-file.sqlite"
    copy.parent.mkdir()
    shutil.copyfile(db, copy)
    reader.communicate("done\n", timeout=30)
    assert nbagent.read_events(copy, agent.session_id) == agent.events
    assert len(agent.events) > 30


async def test_writes_failing_at_random_under_concurrent_callers_lose_and_duplicate_nothing(db):
    """Four threads inject while turns with tools run and one write in five fails. Every call that
    returned is in the log exactly once, every call that raised is absent, and the log passes the
    invariants; a session stopped by a failed ``turn/end`` is resumed (and repaired) to go on."""
    import random
    import threading

    from nbagent import NbagentError, SessionClosedError

    rng = random.Random(20261203)
    rng_lock = threading.Lock()

    def flaky(write):
        def failing_sometimes(rows, **kwargs):
            with rng_lock:
                fail = rng.random() < 0.2
            if fail:
                raise SessionWriteError("writing failed (injected): nothing was recorded")
            write(rows, **kwargs)

        return failing_sometimes

    @nbagent.tool(parallel_safe=True)
    async def lookup(key: str) -> str:
        """Looks a key up."""
        await asyncio.sleep(0)
        return f"value of {key}"

    recorded: list[str] = []
    refused: list[str] = []
    sid = None
    for round_ in range(4):
        responses = [
            Response(
                tool_calls=[
                    ToolCall("lookup", {"key": f"k{i}"}, id=f"r{round_}c{i}"),
                    ToolCall("lookup", {"key": f"j{i}"}, id=f"r{round_}d{i}"),
                ]
            )
            if i % 2 == 0
            else Response(f"answer number {i}", chunk_size=4)
            for i in range(40)
        ]
        model = ScriptedModel(responses)
        agent = (
            nbagent.open_session(db, model=model, tools=[lookup])
            if sid is None
            else nbagent.resume_session(db, sid, model=model, tools=[lookup])
        )
        sid = agent.session_id
        agent.driver.file.write = flaky(agent.driver.file.write)
        stop = threading.Event()

        def injector(tag: str, agent: nbagent.Agent = agent, stop: threading.Event = stop) -> None:
            for i in range(30):
                if stop.is_set():
                    return
                message = UserMessage.text(f"{tag} {i}", source={"kind": "cell"})
                try:
                    agent.inject(message)
                except SessionWriteError:
                    refused.append(message.id)
                except (NbagentError, SessionClosedError):
                    refused.append(message.id)
                    return
                else:
                    recorded.append(message.id)

        threads = [threading.Thread(target=injector, args=(f"r{round_}t{t}",)) for t in range(4)]
        for thread in threads:
            thread.start()
        for i in range(6):
            prompt = UserMessage.text(f"prompt {round_}.{i}")
            try:
                agent.followup(prompt)
            except SessionWriteError:
                refused.append(prompt.id)
                continue
            except NbagentError:  # the session stopped after a failed turn/end: resume below
                refused.append(prompt.id)
                break
            recorded.append(prompt.id)
            await agent.when_idle()
        stop.set()
        for thread in threads:
            await asyncio.to_thread(thread.join)
        await agent.close()
    agent = nbagent.resume_session(db, sid, model="echo")
    events = agent.events
    check_invariants(events, inbox=agent.inbox)
    inserted = [m["id"] for e in events if e.type == "agent/inbox/spliced" for m in e.data["inserted"]]
    assert len(inserted) == len(set(inserted))
    assert set(recorded) <= set(inserted)
    assert not set(refused) & set(inserted)
    assert len(recorded) > 100 and len(refused) > 10
    await agent.close()
