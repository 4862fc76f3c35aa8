"""An agent living on one loop (the notebook's agent loop thread) is awaitable from another loop."""

from __future__ import annotations

import asyncio
import threading

import nbagent


def test_when_idle_run_and_close_are_awaitable_from_another_threads_loop(tmp_path) -> None:
    home = asyncio.new_event_loop()
    thread = threading.Thread(target=home.run_forever, daemon=True)
    thread.start()
    try:

        async def open_here() -> nbagent.Agent:
            return nbagent.open_session(tmp_path / "s.nbagent.sqlite")

        agent = asyncio.run_coroutine_threadsafe(open_here(), home).result(timeout=30)

        async def elsewhere() -> tuple[str | None, str]:
            agent.followup("first")
            await agent.when_idle()
            run = await agent.run("second")
            await agent.close()
            return run.text, agent.status

        text, status = asyncio.run(elsewhere())
        assert text is not None and "second" in text
        assert status == "closed"
        turns = [e.data["turn"] for e in agent.events if e.type == "turn/end"]
        assert turns == [1, 2]
    finally:
        home.call_soon_threadsafe(home.stop)
        thread.join(timeout=30)
