"""The session listing names an unnamed fork by its last replay (SPEC §11.2) and gives each fork's
``purpose`` (the panel nests attribution forks under their parent, collapsed: §11.5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

from fork_story import write_fork
from pytest_jupyter.jupyter_server import *  # noqa: F403
from server_client import API
from test_server_api import get, jp_server_config  # noqa: F401


def test_an_unnamed_fork_is_named_by_its_last_replay(jp_root_dir: Path, get: Any) -> None:  # noqa: F811 (the fixture)
    parent, fork = write_fork(jp_root_dir / "w.nbagent.sqlite")
    status, rows = get(*API, path="")
    assert status == 200
    by_id = {r["id"]: r for r in rows}
    assert by_id[parent]["label"] == "What is the invoice total?" and by_id[parent]["purpose"] is None
    assert by_id[fork]["parent"] == parent and by_id[fork]["purpose"] is None
    assert by_id[fork]["label"] == by_id[fork]["replay_text"]
    assert by_id[fork]["label"].startswith("replay of turn 1: ") and "seen by step 2" in by_id[fork]["label"]


def test_the_plan_endpoint_gives_the_editor_a_finished_turns_arrivals(jp_root_dir: Path, get: Any) -> None:  # noqa: F811 (the fixture)
    parent, _fork = write_fork(jp_root_dir / "w.nbagent.sqlite")
    status, body = get(*API, parent, "plan", file="w.nbagent.sqlite")
    assert status == 200 and body["turns"] == [1]
    plan = body["plan"]
    assert plan["turn"] == 1 and [s["step"] for s in plan["steps"]] == [1, 2, 3]
    (note,) = plan["arrivals"]
    assert (note["label"], note["preview"], note["seen_by"], note["movable"]) == (
        "note",
        "prices are in EUR",
        3,
        True,
    )
    status, body = get(*API, parent, "plan", file="w.nbagent.sqlite", turn=5)
    assert status == 404 and "no finished turn 5 (finished turns: 1)" in body["message"]
