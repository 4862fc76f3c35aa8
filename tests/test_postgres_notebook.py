"""A notebook kernel on the PostgreSQL store: ``%agent --db postgresql://…`` and ``NBAGENT_DB``
select it, and no output ever shows the URL's password (SPEC §6.5, §9.5)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from kernel_helpers import Kernel

import nbagent
from nbagent.notebook.kernel.session_file import session_file
from nbagent.store.location import PostgresLocation, SqliteLocation

PASSWORD = "kernel-Pa55word"


def test_nbagent_db_and_the_db_option_take_a_url_unchanged(tmp_path: Path) -> None:
    url = f"postgresql://me:{PASSWORD}@db.example:5432/team"
    assert session_file({}, environ={"NBAGENT_DB": url}, cwd=tmp_path) == PostgresLocation(url)
    assert session_file({}, override=url, environ={}, cwd=tmp_path) == PostgresLocation(url)
    got = session_file({}, environ={"NBAGENT_DB": "x.sqlite"}, cwd=tmp_path)
    assert got == SqliteLocation(tmp_path / "x.sqlite")


def test_a_url_location_never_shows_its_password(tmp_path: Path) -> None:
    location = session_file({}, override=f"postgresql://me:{PASSWORD}@db.example:5432/team", environ={})
    assert isinstance(location, PostgresLocation)
    for shown in (str(location), repr(location), location.shown, f"{location}", str([location])):
        assert PASSWORD not in shown
        assert "postgresql://me@db.example:5432/team" in shown
    assert PASSWORD in location.url  # libpq still gets the credentials


@pytest.mark.kernel
def test_a_kernel_keeps_its_session_in_postgresql_and_never_prints_the_password(
    tmp_path: Path, pg_cluster, pg_url
) -> None:
    schema = pg_url.rsplit("nbagent.schema%3D", 1)[1]
    with psycopg.connect(pg_cluster.url(), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE carol LOGIN PASSWORD '{PASSWORD}'")
        conn.execute("GRANT CREATE ON DATABASE postgres TO carol")
    options = quote(f"-c nbagent.schema={schema}", safe="")
    url = f"postgresql://carol:{PASSWORD}@127.0.0.1:{pg_cluster.port}/postgres?options={options}"
    shown = f"postgresql://carol@127.0.0.1:{pg_cluster.port}/postgres"
    with Kernel(tmp_path) as k:
        outputs = [k.run("%load_ext nbagent")]
        outputs.append(k.run(f"%agent --db {url}"))
        assert outputs[-1].strip() == f"nbagent: using {shown}"
        outputs.append(k.run("%inject Prices are in EUR."))
        outputs.append(k.run("%followup --wait which currency?"))
        assert "EUR" in outputs[-1]
        outputs.append(k.run("%agent sessions"))
        assert outputs[-1].startswith(f"sessions in {shown}")
        outputs.append(k.run("%agent"))
        assert f"file: {shown}" in outputs[-1]
        outputs.append(k.run("%agent close"))
    assert not (tmp_path / "work.nbagent.sqlite").exists()
    assert all(PASSWORD not in out for out in outputs), outputs
    (row,) = nbagent.list_sessions(url)
    assert row.turns == 1 and PASSWORD not in row.file
