"""Deliveries racing ``close()`` and ``cancel()`` from worker threads (SPEC §3.2, §3.3): a delivery
during ``close()`` is recorded or raises ``SessionClosedError`` (never a crash, never a misleading
error), and a wake that finds no waking work opens no turn (SPEC §1)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading

import pytest
from eventtrace import trace, without_headers

import nbagent
from nbagent.testing import check_invariants

pytestmark = pytest.mark.stores

ROUNDS = 12
THREADS = 8

RACE_CLOSE = """
import asyncio, json, sys, threading
import nbagent
from nbagent import SessionClosedError

async def one_round(db, threads):
    agent = nbagent.open_session(db)
    go = threading.Barrier(threads + 1)
    warmed = threading.Event()  # close() starts once deliveries are flowing
    acknowledged, failures = [], []

    def deliver(n):
        go.wait()
        i = 0
        while True:
            text = f"t{n}-{i}"
            try:
                (agent.followup if i % 3 == 0 else agent.inject)(text)
            except SessionClosedError:
                return
            except BaseException as exc:
                failures.append(f"{type(exc).__name__}: {exc}")
                return
            acknowledged.append(text)
            if len(acknowledged) >= 4 * threads:
                warmed.set()
            i += 1

    def cancel():
        go.wait()
        while not agent.closed:
            try:
                agent.cancel()
            except BaseException as exc:
                failures.append(f"cancel: {type(exc).__name__}: {exc}")
                return

    workers = [threading.Thread(target=deliver, args=(n,)) for n in range(threads - 1)]
    workers.append(threading.Thread(target=cancel))
    for w in workers:
        w.start()
    await asyncio.to_thread(go.wait)
    await asyncio.to_thread(warmed.wait, 60)
    await agent.close()
    for w in workers:
        await asyncio.to_thread(w.join)
    return {"session": agent.session_id, "acknowledged": acknowledged, "failures": failures}

async def main(db, rounds, threads):
    for _ in range(rounds):
        print(json.dumps(await one_round(db, threads)), flush=True)

asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
"""


def recorded_texts(events) -> list[str]:
    """Every message text an inbox splice inserted."""
    return [
        block["text"]
        for e in events
        if e.type == "agent/inbox/spliced"
        for m in e.data["inserted"]
        for block in m["content"]
        if block.get("type") == "text"
    ]


def test_deliveries_racing_close_are_recorded_or_refused_as_closed(db):
    child = subprocess.run(
        [sys.executable, "-c", RACE_CLOSE, str(db), str(ROUNDS), str(THREADS)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 0, f"the child died ({child.returncode}): {child.stderr[-3000:]}"
    rounds = [json.loads(line) for line in child.stdout.splitlines()]
    assert len(rounds) == ROUNDS
    for r in rounds:
        assert r["failures"] == [], r["failures"]

    async def read_back() -> None:
        for r in rounds:
            agent = nbagent.resume_session(db, r["session"])
            texts = recorded_texts(agent.events)
            assert set(r["acknowledged"]) <= set(texts)  # everything acknowledged is durable
            assert len(texts) == len(set(texts))  # and recorded once
            check_invariants(agent.events, inbox=agent.inbox)
            await agent.close()

    asyncio.run(read_back())


class Stalls:
    """Answers each request only when cancelled (so a turn stays open until the test acts)."""

    name = "stalls"

    async def stream(self, request, signal):
        await signal.wait()
        if False:  # pragma: no cover - makes this an async generator
            yield None


async def test_followup_then_cancel_from_a_worker_never_opens_an_empty_turn(db):
    """The wake used to open a turn after the cancel had cleared its message: ``turn/start`` with
    nothing claimed, then ``turn/end(aborted)``."""
    for attempt in range(30):
        agent = nbagent.open_session(db, model=Stalls())

        def worker(agent: nbagent.Agent = agent) -> None:
            agent.followup("a")
            agent.cancel()

        if attempt % 2:  # the loop runs meanwhile: the wake may open a's turn before the cancel
            await asyncio.to_thread(worker)
        else:  # the loop is blocked: the cancel always comes before the wake
            t = threading.Thread(target=worker)
            t.start()
            t.join()
        await asyncio.wait_for(agent.when_idle(), 60)
        lines = without_headers(trace(agent.events))
        if "TS 1" in lines:  # a turn opened: it claimed a, and the cancel aborted it
            assert lines[:3] == ["INS nt 0 ['a']", "TS 1", "CLM nt 1"], lines
            assert lines[-1] == "TE 1 aborted:user" and lines.count("TS 1") == 1, lines
        else:  # the cancel cleared a before its wake ran: no turn at all
            assert lines == ["INS nt 0 ['a']", "CAN nt 0 1"], lines
        check_invariants(agent.events, inbox=agent.inbox)
        await agent.close()
