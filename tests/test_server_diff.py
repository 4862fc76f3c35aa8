"""``GET nbagent/api/sessions/<id>/diff``: a fork's turn beside its parent's, the view model the
shared painter paints, through a real Jupyter server over a real session file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

from fork_story import write_fork
from lab_sessions import write_session
from pytest_jupyter.jupyter_server import *  # noqa: F403
from test_server_api import API, get, jp_server_config  # noqa: F401

from nbagent.labserver import handlers


def test_a_forks_diff_is_its_last_turn_beside_its_parents(jp_root_dir: Path, get: Any) -> None:  # noqa: F811 (the fixture)
    parent, fork = write_fork(jp_root_dir / "w.nbagent.sqlite")
    status, body = get(*API, fork, "diff", file="w.nbagent.sqlite")
    assert status == 200
    assert (body["turn_a"], body["turn_b"], body["turns_a"], body["turns_b"]) == (1, 1, [1], [1])
    d = body["diff"]
    assert (d["a"]["session"], d["b"]["session"]) == (parent, fork)
    assert [s["changed"] for s in d["steps"]] == [False, True, True]
    (moved,) = [m for m in d["steps"][1]["sides"][1]["rows"] if m["mark"] != "same"]
    assert (moved["mark"], moved["badge"], moved["first_line"], moved["mark_text"]) == (
        "moved",
        "note",
        "prices are in EUR",
        "moved: step 3 in a",
    )
    assert d["steps"][2]["sides"][1]["missing"] is True
    # The page's words for the fold, the answer's words and sameness come ready-made (§11.3).
    assert d["identical"] is False and d["identical_text"] == ""
    b2 = d["steps"][1]["sides"][1]
    assert b2["carried_text"] == "1 message carried from step 1" and b2["carried_count"] == 1
    assert [r["carried"] for r in b2["rows"]] == [True, False, False, False]  # the prompt; call, result, note
    assert d["steps"][1]["answer_changed"] is True
    assert ["-", "USD (I assumed dollars)."] in d["steps"][1]["answer_diff"]


def test_no_fork_no_turn_and_bad_input_are_answered_by_name(jp_root_dir: Path, get: Any) -> None:  # noqa: F811 (the fixture)
    parent, fork = write_fork(jp_root_dir / "w.nbagent.sqlite")
    status, body = get(*API, parent, "diff", file="w.nbagent.sqlite")
    assert status == 200 and body["diff"] is None and "is not a fork" in body["why"]
    status, body = get(*API, fork, "diff", file="w.nbagent.sqlite", turn=7)
    assert status == 404 and f"session {fork[:8]} has no turn 7 (its turns: 1)" in body["message"]
    status, body = get(*API, fork, "diff", file="w.nbagent.sqlite", against_turn=4)
    assert status == 404 and f"session {parent[:8]} has no turn 4 (its turns: 1)" in body["message"]
    status, body = get(*API, "nope", "diff", file="w.nbagent.sqlite")
    assert status == 404 and "no session nope" in body["message"]
    status, body = get(*API, fork, "diff", file="w.nbagent.sqlite", turn="x")
    assert status == 400 and "turn must be an integer" in body["message"]


def test_a_diff_reads_under_a_budget(jp_root_dir: Path, get: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811 (the fixture)
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["one", "two", "three"])
    _parent, fork = write_fork(jp_root_dir / "w.nbagent.sqlite")
    monkeypatch.setattr(handlers, "DIFF_EVENTS", 10)
    status, body = get(*API, fork, "diff", file="w.nbagent.sqlite")
    assert status == 422 and "events one request may read" in body["message"]
    assert get(*API, sid, "diff", file="s.nbagent.sqlite", headers={"Authorization": "token bad"})[0] == 403
