"""The store's seam (issue #18, item 3): one location type from the user to the store, and the
database drivers kept behind it — the layers above catch nbagent's errors only."""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

import nbagent
from nbagent.errors import NbagentError, SessionFileError
from nbagent.log.events import INBOX_SPLICED
from nbagent.store.location import PostgresLocation, SqliteLocation, parse_location
from nbagent.store.opening import open_store

PACKAGE = Path(nbagent.__file__).resolve().parent
DRIVERS = ("sqlite3", "psycopg")


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def _modules_outside_the_store() -> list[Path]:
    return [p for p in PACKAGE.rglob("*.py") if (PACKAGE / "store") not in p.parents]


def test_no_module_above_the_store_imports_a_database_driver() -> None:
    leaking = {
        str(p.relative_to(PACKAGE)): sorted(n for n in _imports(p) if n.split(".")[0] in DRIVERS)
        for p in _modules_outside_the_store()
    }
    assert {k: v for k, v in leaking.items() if v} == {}


def test_only_the_store_tells_a_url_from_a_path() -> None:
    parsing = [
        str(p.relative_to(PACKAGE))
        for p in _modules_outside_the_store()
        if "nbagent.store.postgres.location" in _imports(p) or "is_postgres_url" in p.read_text()
    ]
    assert parsing == []


def test_a_location_is_parsed_once_into_a_path_or_a_url(tmp_path: Path) -> None:
    url = "postgresql://me:s3cret@db.example/team"
    assert parse_location(f"  {url} ") == PostgresLocation(url)
    assert parse_location("POSTGRES://h/db") == PostgresLocation("POSTGRES://h/db")
    assert parse_location("x.sqlite") == SqliteLocation(Path("x.sqlite"))
    assert parse_location("x.sqlite", cwd=tmp_path) == SqliteLocation(tmp_path / "x.sqlite")
    assert parse_location("~/x.sqlite") == SqliteLocation(Path.home() / "x.sqlite")
    assert parse_location(tmp_path / "y.sqlite") == SqliteLocation(tmp_path / "y.sqlite")
    same = SqliteLocation(tmp_path / "z.sqlite")
    assert parse_location(same) is same
    with pytest.raises(TypeError, match="a path or a postgresql:// URL, not int"):
        parse_location(3)  # type: ignore[arg-type]


def test_a_sqlite_location_is_usable_as_a_path(tmp_path: Path) -> None:
    location = SqliteLocation(tmp_path / "a.sqlite")
    assert Path(location) == tmp_path / "a.sqlite"
    assert str(location) == location.shown == str(tmp_path / "a.sqlite")


def test_a_store_knows_the_location_it_was_opened_from(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "s.sqlite"), "create")
    try:
        assert store.where == SqliteLocation(tmp_path / "s.sqlite")
    finally:
        store.close()


def test_a_store_failure_reaches_the_caller_as_an_nbagent_error(tmp_path: Path) -> None:
    """What a driver raises (here SQLite refusing a file that is not a database) arrives as
    nbagent's own error, naming the path, so the notebook catches ``NbagentError`` alone."""
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    with pytest.raises(SessionFileError, match=str(bad)):
        open_store(bad, "read")

    async def main() -> None:
        with pytest.raises(NbagentError, match=str(bad)):
            nbagent.open_session(bad, model="echo")

    asyncio.run(main())


READS = (
    "session_row",
    "sessions",
    "tail",
    "check_log",
    "last_of_type",
    "last_quiet_inbox",
    "events",
    "raw_rows",
    "session_tuple",
)


def test_each_backend_supplies_its_fetching_and_none_of_the_checked_reads() -> None:
    """The reads and their checks are written once (CheckedReads), above both backends."""
    from nbagent.store.checked_reads import CheckedReads
    from nbagent.store.postgres.store import PostgresStore
    from nbagent.store.sqlite.store import SessionFile

    for backend in (SessionFile, PostgresStore):
        assert issubclass(backend, CheckedReads)
        assert [name for name in READS if name in vars(backend)] == []
        supplied = {name for name in vars(CheckedReads) if name.startswith("_fetch")}
        assert supplied and supplied <= set(vars(backend)), backend


def test_rows_cross_the_seam_typed_by_name(tmp_path: Path) -> None:
    from nbagent.store.base import EventRow, StoredSession

    db = tmp_path / "t.sqlite"

    async def main() -> str:
        agent = nbagent.open_session(db, model="echo", title="typed")
        agent.inject(nbagent.UserMessage.text("hello"))
        await agent.close()
        return agent.session_id

    sid = asyncio.run(main())
    store = open_store(db, "read")
    try:
        stored = store.session_tuple(sid)
        rows = store.raw_rows(sid)
    finally:
        store.close()
    assert isinstance(stored, StoredSession)
    assert (stored.id, stored.title, stored.model, stored.metadata) == (sid, "typed", "echo", "{}")
    assert rows and all(isinstance(r, EventRow) for r in rows)
    assert [r.seq for r in rows] == list(range(len(rows)))
    assert {r.session_id for r in rows} == {sid}
    assert rows[0].type == INBOX_SPLICED and rows[0].inbox_pending == 1


def test_the_command_line_never_echoes_a_urls_password(pg_url: str) -> None:
    """A store named on the command line is parsed once; every line naming it shows it redacted."""
    url = pg_url + "&password=Cli-Pa55word"
    listed = subprocess.run(
        [sys.executable, "-m", "nbagent", "sessions", "list", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("nbagent: no sessions in postgresql://postgres@")
    assert "Cli-Pa55word" not in listed.stdout + listed.stderr
