"""A session file's ``-wal`` and ``-shm`` get the checks the file gets (issue 32, item 4): a sidecar
that is a symbolic link (it may lead out of the served folder) or not a regular file is refused
before anything opens it, and the private copy a reader makes of a log a stopped writer left stays
within the request's budget."""

from __future__ import annotations

import asyncio
import functools
import glob
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from filestate import crashed_copy

import nbagent
from nbagent.errors import SessionFileError
from nbagent.labserver import handlers
from nbagent.store import budget
from nbagent.store.budget import Budget, ReadLimitError, bounded

pytest.importorskip("jupyter_server")
pytest.importorskip("pytest_jupyter")

from pytest_jupyter.jupyter_server import *  # noqa: F403
from tornado.httpclient import HTTPClientError

API = ("nbagent", "api", "sessions")


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"nbagent.labserver": True}}}


@pytest.fixture
def get(jp_fetch: Any, jp_asyncio_loop: Any) -> Any:
    async def fetch(parts: tuple[str, ...], params: dict[str, Any]) -> tuple[int, Any]:
        import json

        try:
            r = await jp_fetch(*parts, params={k: str(v) for k, v in params.items()})
        except HTTPClientError as exc:
            assert exc.response is not None
            return exc.code, json.loads(exc.response.body or b"{}")
        return r.code, json.loads(r.body)

    def run(*parts: str, **params: Any) -> tuple[int, Any]:
        asyncio.set_event_loop(jp_asyncio_loop)
        return jp_asyncio_loop.run_until_complete(fetch(parts, params))

    return run


def _read_copies() -> set[str]:
    return set(glob.glob(os.path.join(tempfile.gettempdir(), "nbagent-read-*")))


def _session_id(path: Path) -> str:
    return nbagent.list_sessions(path)[0].id


@pytest.fixture
def crashed(jp_root_dir: Path, tmp_path: Path) -> tuple[Path, str]:
    """A session file in the server root with a -wal a stopped writer left; its session id."""
    path = crashed_copy(jp_root_dir / "s.nbagent.sqlite", tmp_path / "scratch")
    return path, _session_id(path)


def _outside(tmp_path: Path, size: int) -> Path:
    """A big (sparse) file outside the server root."""
    secret = tmp_path / "outside" / "big.bin"
    secret.parent.mkdir()
    with open(secret, "wb") as f:
        f.truncate(size)
    return secret


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
def test_a_sidecar_symlink_out_of_the_root_is_refused_and_nothing_is_copied(
    crashed: tuple[Path, str], tmp_path: Path, get: Any, suffix: str
) -> None:
    path, sid = crashed
    target = _outside(tmp_path, 64 << 20)
    os.replace(f"{path}{suffix}", tmp_path / f"moved{suffix}")
    os.symlink(target, f"{path}{suffix}")
    copies = _read_copies()
    for parts, params in [
        (API, {"path": ""}),
        (API, {"file": path.name}),
        ((*API, sid, "events"), {"file": path.name}),
    ]:
        status, body = get(*parts, **params)
        text = body["message"] if status != 200 else body[0]["error"]
        assert status in (200, 422), (status, body)
        assert f"{path.name}{suffix} is a symbolic link" in text, text
        assert str(tmp_path) not in text  # the link's target is not named
    with pytest.raises(SessionFileError, match="is a symbolic link"):
        nbagent.read_events(path, sid)
    assert _read_copies() == copies
    assert target.stat().st_size == 64 << 20 and os.path.islink(f"{path}{suffix}")


def test_a_sidecar_that_is_a_fifo_or_a_folder_is_refused_without_blocking(tmp_path: Path) -> None:
    path = crashed_copy(tmp_path / "s.nbagent.sqlite", tmp_path / "scratch")
    sid = _session_id(path)
    for suffix, make in (("-wal", os.mkfifo), ("-shm", os.mkdir)):
        os.replace(f"{path}{suffix}", tmp_path / f"moved{suffix}")
        make(f"{path}{suffix}")
        done: list[BaseException] = []
        reader = threading.Thread(target=_catch, args=(done, nbagent.read_events, path, sid))
        reader.start()
        reader.join(120)  # a bound for a hang, not a timing: the refusal comes before any open(2)
        assert not reader.is_alive() and len(done) == 1
        assert isinstance(done[0], SessionFileError) and "not a regular file" in str(done[0])
        os.rmdir(f"{path}{suffix}") if suffix == "-shm" else os.unlink(f"{path}{suffix}")
        os.replace(tmp_path / f"moved{suffix}", f"{path}{suffix}")
    assert len(nbagent.read_events(path, sid)) > 0  # the file itself was left as it was


def _catch(into: list[BaseException], fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except BaseException as exc:
        into.append(exc)


def test_the_copy_of_a_log_a_stopped_writer_left_is_bounded(
    crashed: tuple[Path, str], get: Any, monkeypatch: Any
) -> None:
    path, sid = crashed
    size = path.stat().st_size + Path(f"{path}-wal").stat().st_size
    with bounded(Budget(max_copy=size - 1)), pytest.raises(ReadLimitError, match="one request may copy"):
        nbagent.read_events(path, sid)
    with bounded(Budget(max_copy=size)):
        assert len(nbagent.read_events(path, sid)) > 0
    monkeypatch.setattr(handlers, "Budget", functools.partial(budget.Budget, max_copy=size - 1))
    copies = _read_copies()
    status, body = get(*API, sid, "events", file=path.name)
    assert status == 422 and "one request may copy" in body["message"], body
    assert _read_copies() == copies
