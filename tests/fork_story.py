"""The what-if story as a session file (the tutorial notebooks/what-if.ipynb, without a notebook):
for the diff's server and browser tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def write_fork(path: Path) -> tuple[str, str]:
    """The what-if story in a session file: a parent whose note arrived a step late, and a fork
    that replayed its turn with the note a step earlier. Returns (parent id, fork id)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import nbagent
    from nbagent.models import Response, ScriptedModel, ToolCall

    note = "prices are in EUR"

    def answer(request: Any) -> str:
        seen = any(note in m.plain_text for m in request.messages)
        return "The total is 120 EUR." if seen else "The total is 120 USD (I assumed dollars)."

    def model(late: Any = None) -> ScriptedModel:
        def answer_late(request: Any) -> str:
            if late is not None:
                late()
            return answer(request)

        return ScriptedModel(
            [Response(tool_calls=[ToolCall("invoice_total", id="c1")]), answer_late, "Noted."]
        )

    def invoice_total() -> str:
        """The invoice total, without its currency."""
        return "120"

    async def story() -> tuple[str, str]:
        agent = nbagent.open_session(path, tools=[invoice_total])
        agent.set_model(model(lambda: agent.inject(nbagent.UserMessage.text(note, {"kind": "note"}))))
        await agent.run("What is the invoice total?")
        child = agent.fork(before_turn=1, model=model())
        plan = child.replay_plan(turn=1)
        await child.replay(turn=1, move={plan[0].message_id: 1})
        ids = agent.session_id, child.session_id
        await child.close()
        await agent.close()
        return ids

    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread
        return pool.submit(asyncio.run, story()).result()
