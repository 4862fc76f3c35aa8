"""Fixtures shared by the test suite (helpers to import live in ``eventtrace.py`` and
``provider_servers.py``)."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pg_bouncer as pg_bouncer_module
import pg_server
import pytest
from provider_servers import ProviderServer

PROVIDER_ENV = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "OLLAMA_API_KEY", "DEEPSEEK_API_KEY",
    "DEEPSEEK_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "NBAGENT_BASE_URL", "NBAGENT_API_KEY",
)  # fmt: skip
"""Variables the providers read: none may leak in from the machine running the tests."""

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


@pytest.fixture(scope="session")
def pg_bouncer(pg_cluster):
    """A PgBouncer in transaction pooling mode in front of ``pg_cluster`` (skips where there is none)."""
    reason = pg_bouncer_module.unavailable_reason()
    if reason:
        if os.environ.get("NBAGENT_REQUIRE_POSTGRES"):
            pytest.fail(reason)
        pytest.skip(reason)
    with pg_bouncer_module.Bouncer(pg_cluster) as bouncer:
        yield bouncer


_schema_numbers = itertools.count()


@pytest.fixture
def pg_url(request, pg_cluster) -> str:
    """A ``postgresql://`` URL whose nbagent schema is fresh (nothing exists there yet); through
    PgBouncer in transaction mode when ``NBAGENT_TEST_PGBOUNCER=1`` (the whole suite can run so)."""
    schema = f"t{os.getpid()}_{next(_schema_numbers)}"
    if os.environ.get("NBAGENT_TEST_PGBOUNCER") == "1":
        return request.getfixturevalue("pg_bouncer").url(schema=schema)
    return pg_cluster.url(schema=schema)


class SmallDisk:
    """A tmpfs of a few MB mounted on a temp folder: fill it up, free it again."""

    def __init__(self, path, size_kb: int) -> None:
        self.path = path
        self.size_kb = size_kb
        self._filler = None

    def fill(self, leave: int = 0) -> None:
        """Take every free byte but ``leave`` (a filler file written until the disk says it is full,
        then shortened by ``leave``)."""
        import errno
        import os

        self._filler = os.open(self.path / "filler", os.O_CREAT | os.O_WRONLY, 0o600)
        block = b"\0" * 4096
        while True:
            try:
                os.write(self._filler, block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
        if leave:
            os.ftruncate(self._filler, max(0, os.fstat(self._filler).st_size - leave))

    def free(self) -> None:
        import os

        if self._filler is not None:
            os.close(self._filler)
            self._filler = None
            os.unlink(self.path / "filler")


@pytest.fixture
def small_disk(tmp_path):
    """A real full-disk condition: a 2 MB tmpfs (needs root; skipped where mount is not permitted)."""
    import os
    import subprocess

    mnt = tmp_path / "disk"
    mnt.mkdir()
    size_kb = 2048
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=0755", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'mount failed'}); run as root")
    disk = SmallDisk(mnt, size_kb)
    try:
        yield disk
    finally:
        disk.free()
        os.sync()
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def public_dir():
    """A folder every user can reach (pytest's own temp folders are private to root)."""
    import shutil
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp(prefix="nbagent-test-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    path.chmod(0o755)
    shutil.rmtree(path)


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    """A local HTTP server on 127.0.0.1 speaking both providers' streaming protocols."""
    with ProviderServer() as srv:
        yield srv


@pytest.fixture
def provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No provider variable from the machine; dummy keys for both providers (no request leaves
    127.0.0.1, so no real key is ever needed)."""
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-dummy")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-dummy")


@pytest.fixture(autouse=True)
def _server_pool_size_stays_in_its_test():
    """A Jupyter server loaded in this process sizes its PostgreSQL pools for itself
    (``c.NbagentServer.pool_size``); after its test, this process sizes them as a kernel does again,
    and the pools opened at the server's size are closed (the next call opens a kernel's)."""
    from nbagent.store.postgres import pool as pg_pool

    before = pg_pool._process_size
    yield
    if pg_pool._process_size != before:
        pg_pool._process_size = before
        pg_pool._close_all()
