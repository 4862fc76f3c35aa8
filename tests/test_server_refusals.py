"""Requests the lab extension's REST API must refuse with a 4xx rather than fail with a 500 (issue
32, item 7): a stored event that is valid JSON but not the shape of its type, an overlong ``file=``,
and the export of a file whose name is not Latin-1 or holds a ``"`` (RFC 6266 ``filename*``)."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

from lab_sessions import write_session
from pytest_jupyter.jupyter_server import *  # noqa: F403
from tornado.httpclient import HTTPClientError

API = ("nbagent", "api", "sessions")
READERS = ("events", "timeline", "transcript")


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"nbagent.labserver": True}}}


@pytest.fixture
def get(jp_fetch: Any, jp_asyncio_loop: Any) -> Any:
    """A blocking GET: ``get(*path, **params)`` -> (status, headers, body bytes)."""

    async def fetch(parts: tuple[str, ...], params: dict[str, Any]) -> tuple[int, Any, bytes]:
        try:
            r = await jp_fetch(*parts, params={k: str(v) for k, v in params.items()})
        except HTTPClientError as exc:
            assert exc.response is not None
            return exc.code, exc.response.headers, exc.response.body or b""
        return r.code, r.headers, r.body

    def run(*parts: str, **params: Any) -> tuple[int, Any, bytes]:
        asyncio.set_event_loop(jp_asyncio_loop)
        return jp_asyncio_loop.run_until_complete(fetch(parts, params))

    return run


def _replace(path: Path, sid: str, event_type: str, data: str) -> int:
    conn = sqlite3.connect(path)
    (seq,) = conn.execute(
        "SELECT min(seq) FROM events WHERE session_id = ? AND type = ?", (sid, event_type)
    ).fetchone()
    conn.execute("UPDATE events SET data = ? WHERE session_id = ? AND seq = ?", (data, sid, seq))
    conn.commit()
    conn.close()
    return seq


WRONG_SHAPES = {
    "a list": ("assistant/message", "[1, 2, 3]"),
    "a string": ("assistant/message", '"hello"'),
    "no turn field": ("assistant/message", '{"message": 5}'),
    "a number for the message": ("assistant/message", '{"turn": 1, "step": 1, "message": 5}'),
    "content not a list": (
        "assistant/message",
        '{"turn": 1, "step": 1, "message": {"role": "assistant", "content": "x"}}',
    ),
    "content items not blocks": (
        "assistant/message",
        '{"turn": 1, "step": 1, "message": {"role": "assistant", "content": [1, null, "x"]}}',
    ),
    "a user message of numbers": ("user/message", '{"turn": 1, "message": {"role": 7, "content": {"a": 1}}}'),
    "a turn number as text": ("turn/start", '{"turn": "one", "trigger": {}}'),
    "a trigger that is a list": ("turn/start", '{"turn": 1, "trigger": [1]}'),
    "an empty object": ("turn/end", "{}"),
    "an outcome of numbers": ("turn/end", '{"turn": 1, "outcome": 5, "reason": 7, "usage": "x"}'),
}


@pytest.mark.parametrize("shape", sorted(WRONG_SHAPES))
def test_an_event_of_the_wrong_shape_is_a_422_naming_it(jp_root_dir: Path, get: Any, shape: str) -> None:
    path = jp_root_dir / "s.nbagent.sqlite"
    sid = write_session(path, ["hello", "again"])
    event_type, data = WRONG_SHAPES[shape]
    seq = _replace(path, sid, event_type, data)
    for what in READERS:
        status, _, body = get(*API, sid, what, file="s.nbagent.sqlite")
        assert status in (200, 422), (what, status, body[:300])
        if status == 422:
            assert f"seq {seq}" in json.loads(body)["message"], body
    statuses = {what: get(*API, sid, what, file="s.nbagent.sqlite")[0] for what in READERS}
    assert 500 not in statuses.values()


def test_an_overlong_file_parameter_is_a_422(jp_root_dir: Path, get: Any) -> None:
    sid = write_session(jp_root_dir / "s.nbagent.sqlite", ["hello"])
    for file in ("a" * 5000, "d/" * 2500, "x" * 300 + ".nbagent.sqlite"):
        for parts in (API, (*API, sid, "events"), (*API, sid, "transcript")):
            status, _, body = get(*parts, file=file)
            assert status == 422 if len(file) > 1024 else status in (404, 422), (parts, status, body[:200])
            assert len(body) < 2000


def _disposition(headers: Any) -> tuple[str, dict[str, str]]:
    """The disposition type and its parameters, read as RFC 6266 writes them (quoted strings whole)."""
    value = headers["Content-Disposition"]
    kind = value.split(";", 1)[0]
    params = dict(re.findall(r';\s*([^=\s;]+)=("(?:[^"\\]|\\.)*"|[^;]*)', value))
    assert ";".join([kind, *(f" {k}={v}" for k, v in params.items())]) == value  # nothing else in it
    return kind, {k: v.strip('"') for k, v in params.items()}


@pytest.mark.parametrize(
    "stem",
    ["分析", 'a"; filename=evil.html; x="', "naïve report", "tab\there"],
    ids=["cjk", "quote", "latin1", "tab"],
)
def test_export_names_the_file_with_rfc_6266_filename_star(jp_root_dir: Path, get: Any, stem: str) -> None:
    name = f"{stem}.nbagent.sqlite"
    sid = write_session(jp_root_dir / name, ["hello"])
    status, headers, body = get(*API, sid, "transcript", file=name)
    assert status == 200, body[:300]
    assert "hello" in body.decode()
    kind, params = _disposition(headers)
    assert kind == "attachment" and set(params) == {"filename", "filename*"}  # nothing injected
    fallback = params["filename"]
    charset, _, encoded = params["filename*"].partition("''")
    assert charset == "UTF-8" and unquote(encoded, errors="strict") == f"{stem}-{sid[:8]}.md"
    assert fallback is not None and fallback.isascii() and fallback.endswith(f"-{sid[:8]}.md")
    assert headers["Content-Disposition"].isascii()
    assert quote(stem, safe="") in headers["Content-Disposition"]
