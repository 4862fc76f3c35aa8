"""A live turn's bundle names where its session lives (``session: {id, file}``), so a front end can
look up the turn's true end after the kernel is gone (issue #32 item 12; docs/timeline-json.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbagent
from nbagent import UserMessage
from nbagent.notebook.kernel.session_file import relative_file
from nbagent.notebook.magics.live_turn import LiveTurn
from nbagent.store.location import PostgresLocation, SqliteLocation
from nbagent.views import TIMELINE_MIME, TurnView


class Recorder:
    def __init__(self) -> None:
        self.published: list[dict[str, Any]] = []

    def show(self, data: dict[str, Any]) -> None:
        self.published.append(data)

    def update(self, data: dict[str, Any]) -> None:
        self.published.append(data)


async def test_every_bundle_of_a_live_turn_names_its_session(tmp_path: Path) -> None:
    agent = nbagent.open_session(tmp_path / "s.nbagent.sqlite", model="echo")
    ref = {"id": agent.session_id, "file": "s.nbagent.sqlite"}
    message = UserMessage.text("hello")
    surface = Recorder()
    view = LiveTurn(agent, message, "followup", surface, session=ref)
    view.start()
    assert (await agent.run(message)).outcome == "completed"
    view.refresh()
    await agent.close()
    bundles = [data[TIMELINE_MIME] for data in surface.published]
    assert len(bundles) >= 2  # the queued view and the ended turn at least
    assert all(b["session"] == ref for b in bundles)
    assert bundles[-1]["scope"] == {"turn": 1} and bundles[-1]["status"] == "idle"


def test_a_view_without_a_known_session_says_null() -> None:
    assert TurnView("followup", "go").to_json()["session"] is None


def test_the_session_file_is_relative_to_the_working_directory(tmp_path: Path) -> None:
    here = tmp_path / "work"
    assert relative_file(SqliteLocation(here / "a.nbagent.sqlite"), here) == "a.nbagent.sqlite"
    assert relative_file(SqliteLocation(here / "sub" / "b.sqlite"), here) == "sub/b.sqlite"
    assert relative_file(SqliteLocation(tmp_path / "c.sqlite"), here) == "../c.sqlite"


def test_a_postgresql_session_has_no_file() -> None:
    assert relative_file(PostgresLocation("postgresql://u:secret@h/db"), Path.cwd()) is None
