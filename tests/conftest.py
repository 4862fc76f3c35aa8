"""Fixtures shared by the test suite (helpers to import live in ``eventtrace.py``)."""

from __future__ import annotations

import itertools
import os

import pg_server
import pytest

STORES = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked ``stores`` run once per store: ``db`` is a SQLite path, then a PostgreSQL URL."""
    definition = metafunc.definition
    if (
        "db" in metafunc.fixturenames
        and definition.get_closest_marker("stores")
        and not definition.get_closest_marker("sqlite_only")
    ):
        metafunc.parametrize("db", STORES, indirect=True)


@pytest.fixture
def db(request, tmp_path):
    """Where a test's sessions live: a fresh session file path beside a pretend notebook or, for the
    ``postgresql`` parameter of a test marked ``stores``, a URL of a fresh schema on a real server."""
    if getattr(request, "param", "sqlite") == "postgresql":
        return request.getfixturevalue("pg_url")
    return tmp_path / "session.nbagent.sqlite"


@pytest.fixture(scope="session")
def pg_cluster():
    """A PostgreSQL server started for this test run (skips, saying why, where none can be)."""
    reason = pg_server.unavailable_reason()
    if reason:
        if os.environ.get("NBAGENT_REQUIRE_POSTGRES"):
            pytest.fail(reason)
        pytest.skip(reason)
    cluster = pg_server.Cluster().start()
    try:
        yield cluster
    finally:
        cluster.stop()


_schema_numbers = itertools.count()


@pytest.fixture
def pg_url(pg_cluster) -> str:
    """A ``postgresql://`` URL whose nbagent schema is fresh (nothing exists there yet)."""
    return pg_cluster.url(schema=f"t{os.getpid()}_{next(_schema_numbers)}")
