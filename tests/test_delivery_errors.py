"""Deliveries the session drops after a failed write say why (issue #19 item 10, SPEC §6.2): the
write's error, naming the path and the cause, not only "the session stopped before this was
written"."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from typing import Any

import nbagent
from nbagent.models import ScriptedModel


class TurnEndGate:
    """The session's real store, whose write of ``turn/end`` waits for the test to let it go on."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.reached = threading.Event()
        self.go_on = threading.Event()

    def write(self, rows: Any, **kwargs: Any) -> None:
        if any(row[3] == "turn/end" for row in rows) and not self.reached.is_set():
            self.reached.set()
            assert self.go_on.wait(60), "the test never let the turn's end be written"
        self.store.write(rows, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_deliveries_dropped_when_the_turn_end_meets_a_full_disk_name_the_path_and_the_cause(
    small_disk,
) -> None:
    """Two deliveries staged while the write of the turn's end met a full disk: the session stops
    (it cannot record the end) and drops them. They used to fail with "the session stopped before
    this was written" alone, naming neither the file nor the cause."""
    db = small_disk.path / "s.nbagent.sqlite"
    outcomes: list[BaseException | None] = []

    async def main() -> None:
        agent = nbagent.open_session(db, model=ScriptedModel(["done"]))
        journal = agent.driver.journal
        gate = journal.file = TurnEndGate(journal.file)

        def deliver(i: int) -> None:
            try:
                agent.inject(f"context {i}")
            except Exception as exc:  # collected and asserted on below
                outcomes.append(exc)
            else:
                outcomes.append(None)

        def control() -> None:
            """Beside the loop thread, which the gate holds inside the write of ``turn/end``."""
            assert gate.reached.wait(60)
            workers = [threading.Thread(target=deliver, args=(i,)) for i in range(2)]
            for worker in workers:
                worker.start()
            deadline = time.monotonic() + 60
            while len(journal._staged) < len(workers):  # both staged behind the gated write
                assert time.monotonic() < deadline, "the deliveries were never staged"
                time.sleep(0.005)
            small_disk.fill()
            gate.go_on.set()
            for worker in workers:
                worker.join(60)

        controller = asyncio.get_running_loop().run_in_executor(None, control)
        agent.followup("go")
        await controller
        small_disk.free()
        await agent.close()

    # The failed write hands the staged deliveries back to be written again and wakes one of them
    # to lead that write; the loop's thread meanwhile stops the session and drops them. A long
    # switch interval lets the loop's thread (which holds the GIL and blocks on nothing in between)
    # reach the drop first every time, so the drop's message is the one under test.
    interval = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    try:
        asyncio.run(main())
    finally:
        sys.setswitchinterval(interval)
    assert len(outcomes) == 2
    for error in outcomes:
        assert isinstance(error, nbagent.SessionWriteError), outcomes
        message = str(error)
        assert "the session stopped before this was written" in message, message
        assert str(db) in message and "the disk is full" in message, message


class FailingWrites:
    """The session's real store, whose writes fail once armed (a full disk, a database gone)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.armed = False

    def write(self, rows: Any, **kwargs: Any) -> None:
        if self.armed:
            from nbagent.errors import SessionWriteError

            raise SessionWriteError("the store refused the write (a test's stand-in for a full disk)")
        self.store.write(rows, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_a_close_whose_turn_end_could_not_be_written_says_so(tmp_path: Any, caplog: Any) -> None:
    """close() always finishes; when the running turn's end could not be written it logs that, and
    resuming closes the turn (it used to return without a word: a kernel shutting down with its
    database's pools already closed lost the turn's end silently)."""
    db = tmp_path / "s.nbagent.sqlite"
    started = asyncio.Event()

    async def slow(request: Any) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    async def main() -> str:
        agent = nbagent.open_session(db, model=ScriptedModel([slow]))
        store = agent.driver.journal.file = FailingWrites(agent.driver.journal.file)
        agent.followup("go")
        await started.wait()
        store.armed = True
        with caplog.at_level("WARNING", logger="nbagent"):
            await agent.close()
        assert agent.status == "closed"
        return agent.session_id

    sid = asyncio.run(main())
    said = [r.getMessage() for r in caplog.records if "closed after a failed write" in r.getMessage()]
    assert len(said) == 1 and sid in said[0] and "the store refused the write" in said[0], caplog.text
    assert [e.type for e in nbagent.read_events(db, sid)][-1] != "turn/end"

    async def resume() -> list[str]:
        again = nbagent.resume_session(db, sid, model=ScriptedModel([]))
        await again.close()
        return [e.type for e in nbagent.read_events(db, sid)]

    assert "turn/end" in asyncio.run(resume())  # the next resume closed the turn left open
