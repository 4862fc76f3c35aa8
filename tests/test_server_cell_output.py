"""``timeline?turn=N&output=cell``: a turn as a live cell's output shows it, which the lab extension
puts in the cell of a turn cut short by a kernel restart (issue #32 item 12): the timeline bundle, the
kernel's HTML and text, headed by the cell's own headline, escaped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

import server_client
from lab_sessions import XSS, write_session
from pytest_jupyter.jupyter_server import *  # noqa: F403
from server_client import API

from nbagent.labserver.cell_output import MAX_HEADLINE
from nbagent.views import TIMELINE_MIME

jp_server_config = server_client.jp_server_config
get = server_client.get


def test_a_turn_as_its_cell_shows_it_with_the_cells_headline_escaped(jp_root_dir: Path, get: Any) -> None:
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["first", "second"])
    headline = f"followup «{XSS}» · turn 2 · done"
    status, output = get(
        *API, sid, "timeline", file="s.nbagent.sqlite", turn=2, output="cell", headline=headline
    )
    assert status == 200
    assert set(output) == {TIMELINE_MIME, "text/html", "text/plain"}
    bundle = output[TIMELINE_MIME]
    assert bundle["scope"] == {"turn": 2} and bundle["status"] == "idle"
    assert bundle["headline"] == headline
    assert bundle["nodes"][0]["id"] == "turn-2" and bundle["nodes"][0]["status"] == "completed"
    assert "<script>" not in output["text/html"] and "<img" not in output["text/html"]
    assert "&lt;script&gt;" in output["text/html"]
    assert output["text/plain"].startswith(headline)


def test_a_long_headline_is_cut(jp_root_dir: Path, get: Any) -> None:
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["first"])
    _, output = get(
        *API, sid, "timeline", file="s.nbagent.sqlite", turn=1, output="cell", headline="x" * 10_000
    )
    assert len(output[TIMELINE_MIME]["headline"]) <= MAX_HEADLINE + 1


def test_output_cell_needs_a_turn_and_no_other_output_is_known(jp_root_dir: Path, get: Any) -> None:
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["first"])
    status, body = get(*API, sid, "timeline", file="s.nbagent.sqlite", output="cell")
    assert status == 422 and "turn=N" in str(body)
    status, _ = get(*API, sid, "timeline", file="s.nbagent.sqlite", turn=1, output="page")
    assert status == 422
