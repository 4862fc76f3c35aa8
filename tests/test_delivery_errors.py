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
