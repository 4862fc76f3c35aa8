"""What the session tab reads from the REST API: lineage in the listing, and a long session's
newest turns without folding its whole log (windows of turns, earlier pages on demand)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

import server_client
from lab_sessions import write_family, write_synthetic
from pytest_jupyter.jupyter_server import *  # noqa: F403
from server_client import API

import nbagent
import nbagent.views

# The server and its client, shared with the other REST API tests (fixtures by name).
jp_server_config = server_client.jp_server_config
get = server_client.get


def test_the_listing_names_the_parent_of_a_fork(jp_root_dir: Path, get: Any) -> None:
    parent, child = write_family(jp_root_dir / "what-if.nbagent.sqlite")
    status, rows = get(*API, path="")
    assert status == 200
    assert {r["id"]: r["parent"] for r in rows} == {parent: None, child: parent}


def full_fold(path: Path, sid: str) -> dict[str, Any]:
    return nbagent.views.timeline_json(nbagent.read_events(path, sid), max_text=None)


def turns_of(nodes: list[dict[str, Any]], first: int, last: int) -> list[dict[str, Any]]:
    """The nodes of turns ``first..last`` (their subtrees, in log order), ``cut`` flags dropped."""
    keep: set[str] = set()
    out = []
    for n in nodes:
        inside = n["type"] == "turn" and n["parent"] is None and first <= n["turn"] <= last
        if inside or n["parent"] in keep:
            keep.add(n["id"])
            out.append({k: v for k, v in n.items() if k != "cut"})
    return out


def window(get: Any, path: Path, sid: str, **params: Any) -> dict[str, Any]:
    status, bundle = get(*API, sid, "timeline", file=path.name, **params)
    assert status == 200, bundle
    return bundle


def test_a_window_holds_the_newest_turns_as_the_whole_fold_shows_them(jp_root_dir: Path, get: Any) -> None:
    path = jp_root_dir / "long.nbagent.sqlite"
    sid, events = write_synthetic(path, 300, pending=40)
    whole = full_fold(path, sid)
    bundle = window(get, path, sid, window=20)
    assert (bundle["first_turn"], bundle["seq"], bundle["log_seq"]) == (281, events, events)
    assert bundle["summary"] == whole["summary"] == f"300 turns · {events} events"
    assert turns_of(bundle["nodes"], 281, 300) == turns_of(whole["nodes"], 281, 300)
    assert [n["id"] for n in bundle["nodes"] if n["parent"] is None] == [f"turn-{t}" for t in range(281, 301)]
    assert bundle["pending"] == whole["pending"] and len(bundle["pending"]["next_step"]) == 40
    assert bundle["usage"] is None  # folded from mid-log: no session totals
    assert get(*API, sid, "timeline", file=path.name, window=20, known=events)[0] == 204

    page = window(get, path, sid, window=20, before=281)
    assert page["first_turn"] == 261 and page["pending"] == {"next_step": [], "next_turn": []}
    assert turns_of(page["nodes"], 261, 280) == turns_of(whole["nodes"], 261, 280) == page["nodes"]
    first = window(get, path, sid, window=20, before=11)
    assert first["first_turn"] == 1 and turns_of(first["nodes"], 1, 10) == first["nodes"]
    assert [n["turn"] for n in first["nodes"] if n["type"] == "turn"] == list(range(1, 11))
    assert get(*API, sid, "timeline", file=path.name, window=20, before=301)[0] == 404


def test_a_followed_window_grows_with_new_turns_and_a_long_tail_is_folded_over_polls(
    jp_root_dir: Path, get: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbagent.labserver import handlers

    path = jp_root_dir / "queue.nbagent.sqlite"
    sid, events = write_synthetic(path, 30, pending=2500)
    monkeypatch.setattr(handlers, "FOLD_EVENTS", 1000)
    bundle = window(get, path, sid, window=5)
    assert bundle["first_turn"] == 26 and bundle["seq"] < bundle["log_seq"] == events
    polls = 1
    while bundle["seq"] < bundle["log_seq"]:
        bundle = window(get, path, sid, window=5, known=bundle["seq"])
        polls += 1
    assert polls >= 3 and bundle["seq"] == events
    whole = full_fold(path, sid)
    assert bundle["pending"] == whole["pending"]
    assert turns_of(bundle["nodes"], 26, 30) == turns_of(whole["nodes"], 26, 30)


def test_a_fork_s_window_keeps_its_lineage_however_long_the_prefix(jp_root_dir: Path, get: Any) -> None:
    path = jp_root_dir / "what-if.nbagent.sqlite"
    parent, child = write_family(path)
    bundle = window(get, path, child, window=1)
    assert bundle["first_turn"] == 3
    forked = [n for n in bundle["nodes"] if n["type"] == "forked"]
    assert [(n["parent_session"], n["turn"]) for n in forked] == [(parent, 2)]


def test_an_earlier_page_too_long_for_one_fold_holds_fewer_turns(
    jp_root_dir: Path, get: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbagent.labserver import handlers

    path = jp_root_dir / "pages.nbagent.sqlite"
    sid, _ = write_synthetic(path, 60)
    monkeypatch.setattr(handlers, "FOLD_EVENTS", 100)  # 20 turns of 17 events do not fit; 5 do
    page = window(get, path, sid, window=20, before=41)
    assert page["first_turn"] == 36 and page["complete"] is True
    assert turns_of(page["nodes"], 36, 40) == turns_of(full_fold(path, sid)["nodes"], 36, 40) == page["nodes"]


def _damage_an_answer(path: Path, sid: str, data: str) -> int:
    """Replace the data of turn 28's last answer (a crafted file); returns its seq."""
    conn = sqlite3.connect(path)
    (seq,) = conn.execute(
        "SELECT max(seq) FROM events WHERE session_id = ? AND type = 'assistant/message' AND seq < "
        "(SELECT seq FROM events WHERE type = 'turn/start' AND json_extract(data, '$.turn') = 29)",
        (sid,),
    ).fetchone()
    conn.execute("UPDATE events SET data = ? WHERE session_id = ? AND seq = ?", (data, sid, seq))
    conn.commit()
    conn.close()
    return seq


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ('{"x": ' + "[" * 1000 + "]" * 1000 + "}", "nests deeper than"),
        (json.dumps({"x": "y" * (40 << 20)}), "larger than the 32 MB one request may read"),
    ],
    ids=["deep", "large"],
)
def test_a_window_reads_a_crafted_file_under_the_request_s_budget(
    jp_root_dir: Path, get: Any, data: str, says: str
) -> None:
    path = jp_root_dir / "crafted.nbagent.sqlite"
    sid, _ = write_synthetic(path, 30)
    _damage_an_answer(path, sid, data)
    for params in ({"window": 5}, {"window": 5, "before": 30}):
        status, body = get(*API, sid, "timeline", file=path.name, **params)
        assert status == 422 and says in body["message"], (params, status, body)
