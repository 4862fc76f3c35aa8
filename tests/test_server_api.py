"""The lab extension's read-only REST API, through a real Jupyter server (pytest-jupyter's
``jp_fetch``) over real session files written by real agents."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

import server_client
from lab_sessions import XSS, write_session
from pytest_jupyter.jupyter_server import *  # noqa: F403
from server_client import API

import nbagent

# The server and its client, shared with the other REST API tests (fixtures by name).
jp_server_config = server_client.jp_server_config
get = server_client.get


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_listing_shows_each_session_of_the_folders_files_newest_first(jp_root_dir: Path, get: Any) -> None:
    a = write_session(jp_root_dir / "a.nbagent.sqlite", ["Which city is warmest?"], context="Prices in EUR.")
    b = write_session(jp_root_dir / "b.nbagent.sqlite", ["First question", "Second question"], title="Sales")
    (jp_root_dir / "sub").mkdir()
    c = write_session(jp_root_dir / "sub" / "nb.nbagent.sqlite", ["Nested"])
    (jp_root_dir / "notes.sqlite").write_bytes(b"")  # not a session file name: not listed

    status, rows = get(*API, path="")
    assert status == 200
    assert [(r["file"], r["id"]) for r in rows] == [("b.nbagent.sqlite", b), ("a.nbagent.sqlite", a)]
    row_b, row_a = rows
    assert (row_b["title"], row_b["label"], row_b["first_prompt"]) == ("Sales", "Sales", "")
    assert (row_a["title"], row_a["label"]) == (None, "Which city is warmest?")
    assert row_a["first_prompt"] == "Which city is warmest?"  # the typed prompt, not the injected context
    meta = {r.id: r for r in nbagent.list_sessions(jp_root_dir / "a.nbagent.sqlite")}[a]
    assert (row_a["turns"], row_a["events"], row_a["last_time"], row_a["model"]) == (
        1,
        meta.events,
        meta.last_time,
        "echo",
    )
    assert row_b["turns"] == 2 and row_b["last_time"] >= row_a["last_time"]

    assert [(r["file"], r["id"]) for r in get(*API, path="sub")[1]] == [("sub/nb.nbagent.sqlite", c)]
    assert [r["id"] for r in get(*API, file="b.nbagent.sqlite")[1]] == [b]
    assert get(*API, path="empty-or-missing")[0] == 404


def test_events_page_in_seq_order_with_after_and_limit(jp_root_dir: Path, get: Any) -> None:
    path = jp_root_dir / "s.nbagent.sqlite"
    sid = write_session(path, [f"question {i}" for i in range(6)], context="ctx")
    every = [ev.seq for ev in nbagent.read_events(path, sid)]
    assert len(every) > 30

    seen: list[dict[str, Any]] = []
    after = -1
    while True:
        status, page = get(*API, sid, "events", file="s.nbagent.sqlite", after=after, limit=7)
        assert status == 200 and len(page) <= 7
        if not page:
            break
        seen += page
        after = page[-1]["seq"]
    assert [ev["seq"] for ev in seen] == every
    stored = nbagent.read_events(path, sid)
    assert seen[0] == {"seq": 0, "time": stored[0].time, "type": stored[0].type, "data": stored[0].data}

    assert get(*API, sid, "events", file="s.nbagent.sqlite")[1] == seen  # default limit covers it
    assert get(*API, sid, "events", file="s.nbagent.sqlite", after=every[-1])[1] == []
    for bad, code in (({"limit": 0}, 422), ({"limit": 10_001}, 422), ({"after": "x"}, 400)):
        status, body = get(*API, sid, "events", file="s.nbagent.sqlite", **bad)
        assert status == code and body["message"]
    status, body = get(*API, "no-such-id", "events", file="s.nbagent.sqlite")
    assert status == 404 and "no session no-such-id" in body["message"]


def test_every_endpoint_requires_jupyter_auth(jp_root_dir: Path, get: Any) -> None:
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["hello"])
    bad = {"Authorization": "token not-the-token"}
    for parts, params in [
        (API, {"path": ""}),
        ((*API, sid, "events"), {"file": "s.nbagent.sqlite"}),
        ((*API, sid, "timeline"), {"file": "s.nbagent.sqlite"}),
        ((*API, sid, "transcript"), {"file": "s.nbagent.sqlite"}),
    ]:
        assert get(*parts, headers=bad, **params)[0] == 403
        assert get(*parts, **params)[0] == 200


def test_paths_outside_the_root_are_refused(jp_root_dir: Path, tmp_path: Path, get: Any) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    sid = write_session(outside / "secret.nbagent.sqlite", ["private"])
    (jp_root_dir / "link-dir").symlink_to(outside, target_is_directory=True)
    (jp_root_dir / "link.nbagent.sqlite").symlink_to(outside / "secret.nbagent.sqlite")
    (jp_root_dir / ".hidden").mkdir()
    write_session(jp_root_dir / ".hidden" / "h.nbagent.sqlite", ["hidden"])

    for params in ({"path": ".."}, {"path": "../outside"}, {"path": "link-dir"}, {"path": "/.."}):
        status, body = get(*API, **params)
        assert status == 403 and "outside the server root" in body["message"], params
    for file in ("../outside/secret.nbagent.sqlite", "link.nbagent.sqlite", "link-dir/secret.nbagent.sqlite"):
        for what in ("events", "timeline", "transcript"):
            assert get(*API, sid, what, file=file)[0] == 403, (file, what)
    assert get(*API, path="")[1] == []  # the link to a file outside is not listed either
    assert get(*API, path=".hidden")[0] == 404
    assert get(*API, sid, "events", file="nope.nbagent.sqlite")[0] == 404
    assert get(*API, sid, "events")[0] == 400  # no file given


def test_a_foreign_file_gets_a_clear_4xx_and_is_left_byte_identical(jp_root_dir: Path, get: Any) -> None:
    conn = sqlite3.connect(jp_root_dir / "other.nbagent.sqlite")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    conn.close()
    (jp_root_dir / "text.nbagent.sqlite").write_text("just some text, not SQLite\n")
    before = snapshot(jp_root_dir)

    for name in ("other.nbagent.sqlite", "text.nbagent.sqlite"):
        for what in ("events", "timeline", "transcript"):
            status, body = get(*API, "some-id", what, file=name)
            assert status == 422, (name, what, body)
            assert name in body["message"] and "not readable as an nbagent session file" in body["message"]
        status, body = get(*API, file=name)
        assert status == 422
    status, rows = get(*API, path="")
    assert status == 200
    assert {r["file"] for r in rows} == {"other.nbagent.sqlite", "text.nbagent.sqlite"}
    assert all(set(r) == {"file", "error"} and r["error"] for r in rows)
    assert snapshot(jp_root_dir) == before  # same bytes, and no -wal or -shm appeared


def test_an_empty_session_file_is_listed_with_the_reason(jp_root_dir: Path, get: Any) -> None:
    (jp_root_dir / "sub").mkdir()
    (jp_root_dir / "sub" / "empty.nbagent.sqlite").write_bytes(b"")
    status, rows = get(*API, path="sub")
    assert status == 200
    assert rows == [
        {
            "file": "sub/empty.nbagent.sqlite",
            "error": "sub/empty.nbagent.sqlite is empty (0 bytes): no session has been written to it yet",
        }
    ]
    assert (jp_root_dir / "sub" / "empty.nbagent.sqlite").read_bytes() == b""  # still untouched


def test_reading_creates_no_file_beside_a_session(jp_root_dir: Path, get: Any) -> None:
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["hello"], context="ctx")
    before = snapshot(jp_root_dir)
    assert get(*API, path="")[0] == 200
    for what in ("events", "timeline", "transcript"):
        assert get(*API, sid, what, file="s.nbagent.sqlite")[0] == 200
    assert snapshot(jp_root_dir) == before


def test_the_timeline_is_the_view_model_bundle_and_answers_204_while_current(
    jp_root_dir: Path, get: Any
) -> None:
    path = jp_root_dir / "s.nbagent.sqlite"
    sid = write_session(path, ["Which city is warmest?"], context=XSS)
    status, bundle = get(*API, sid, "timeline", file="s.nbagent.sqlite")
    assert status == 200 and bundle["version"] == 1
    assert bundle["seq"] == len(nbagent.read_events(path, sid))
    messages = [n for n in bundle["nodes"] if n["type"] == "message"]
    assert [(m["kind"], m["role"]) for m in messages] == [("cell", "context"), ("user", "followup")]
    assert messages[0]["text"] == XSS  # data, kept verbatim: painters render it as text
    assert get(*API, sid, "timeline", file="s.nbagent.sqlite", known=bundle["seq"]) == (204, "")


def test_the_transcript_marks_prompts_and_context_apart(jp_root_dir: Path, get: Any) -> None:
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["Which city is warmest?"], context=XSS)
    status, md = get(*API, sid, "transcript", file="s.nbagent.sqlite")
    assert status == 200
    assert md.startswith("# Which city is warmest?\n")
    assert "> Which city is warmest?" in md  # the typed prompt, quoted
    assert "📎" in md and XSS in md  # the context, fenced as it was sent
    status, html = get(*API, sid, "transcript", file="s.nbagent.sqlite", format="html")
    assert status == 200 and html.startswith("<!DOCTYPE html>")
    assert "<img src=x" not in html and "&lt;img src=x onerror=" in html
    assert "</dataframe>" not in html and "<script>window" not in html
    assert get(*API, sid, "transcript", file="s.nbagent.sqlite", format="pdf")[0] == 400


def test_reads_while_another_process_writes_see_a_growing_gapless_log(jp_root_dir: Path, get: Any) -> None:
    import subprocess

    from lab_sessions import writer_command

    path = jp_root_dir / "live.nbagent.sqlite"
    writer = subprocess.Popen(writer_command(path, 300), stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None
        sid = writer.stdout.readline().strip()
        seen: list[int] = []
        polls_while_writing = 0
        known: int | None = None
        while True:
            running = writer.poll() is None
            status, page = get(
                *API, sid, "events", file="live.nbagent.sqlite", after=seen[-1] if seen else -1
            )
            assert status == 200
            seen += [ev["seq"] for ev in page]
            assert seen == list(range(len(seen)))  # every page continues the last: no gap, no repeat
            since = {} if known is None else {"known": known}
            status, bundle = get(*API, sid, "timeline", file="live.nbagent.sqlite", **since)
            assert status in (200, 204)
            if status == 200:
                assert bundle["seq"] >= len(seen)  # the fold saw at least what the page read
                known = bundle["seq"]
            status, rows = get(*API, path="")
            assert status == 200 and rows[0]["id"] == sid
            if not running and not page:  # the writer is done and every event has been paged
                break
            polls_while_writing += running
        assert writer.wait() == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.stdout.read().strip() == "done"
    assert polls_while_writing > 0
    assert len(seen) == len(nbagent.read_events(path, sid))
    assert get(*API, sid, "timeline", file="live.nbagent.sqlite", known=known)[0] == 204


def test_the_file_browser_hides_session_side_files_and_keeps_the_servers_own_globs(
    jp_root_dir: Path, get: Any, jp_serverapp: Any
) -> None:
    for name in ("analysis.ipynb", "analysis.nbagent.sqlite", "nbagent.sqlite", "notes.sqlite-wal"):
        (jp_root_dir / name).write_text("{}" if name.endswith(".ipynb") else "")
    for side in ("-wal", "-shm", "-journal"):
        (jp_root_dir / f"analysis.nbagent.sqlite{side}").write_text("")
        (jp_root_dir / f"nbagent.sqlite{side}").write_text("")
    status, listing = get("api", "contents")
    assert status == 200
    assert sorted(item["name"] for item in listing["content"]) == [
        "analysis.ipynb",
        "analysis.nbagent.sqlite",
        "nbagent.sqlite",
        "notes.sqlite-wal",  # not a session's: shown
    ]
    assert "__pycache__" in jp_serverapp.contents_manager.hide_globs  # the server's defaults stay
