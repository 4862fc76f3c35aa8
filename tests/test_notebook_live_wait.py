"""``%followup --wait`` renders a quick turn once: the cell that waited shows its end, and the agent
loop does not render the claim and the end as well (issue #20: three renders became one)."""

from __future__ import annotations

from typing import Any

import pytest
from eventtrace import run

import nbagent
import nbagent.notebook.magics.live_turn as live
from nbagent import UserMessage


class Recorder:
    """A surface that keeps what it was shown, and on which thread state it was updated."""

    def __init__(self) -> None:
        self.shown: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []

    def show(self, data: dict[str, Any]) -> None:
        self.shown.append(data)

    def update(self, data: dict[str, Any]) -> None:
        self.updates.append(data)


async def followup(waited: bool) -> tuple[Recorder, int, live.LiveTurn]:
    agent = nbagent.open_session(None, model="echo")
    message = UserMessage.text("hello")
    surface = Recorder()
    view = live.LiveTurn(agent, message, "followup", surface, waited=waited)
    view.start()
    result = await agent.run(message)
    assert result.outcome == "completed"
    before_refresh = len(surface.updates)
    view.refresh()  # what the magic does once the wait is over
    await agent.close()
    return surface, before_refresh, view


@pytest.fixture
def slow_renders(monkeypatch):
    """Progress renders far apart: a turn of the echo model never lasts long enough for one."""
    monkeypatch.setattr(live, "RENDER_INTERVAL", 3600.0)


def test_a_waited_quick_turn_is_rendered_once_by_the_cell_that_waited(slow_renders):
    surface, before_refresh, view = run(followup(waited=True))
    assert before_refresh == 0  # neither the claim nor the end was rendered from the loop
    assert len(surface.updates) == 1 and view.final and view.settled
    final = surface.updates[0]["text/plain"]
    assert "completed" in final and "echo" in final


def test_without_wait_the_loop_renders_the_claim_at_once(slow_renders):
    surface, before_refresh, view = run(followup(waited=False))
    assert before_refresh >= 1  # the claim (turn running) was shown while the cell did not wait
    assert view.final and "completed" in surface.updates[-1]["text/plain"]
