"""A throwaway PostgreSQL cluster for the tests and benchmarks: ``initdb`` + ``pg_ctl`` in a temp folder.

Nothing is set up beforehand: the cluster is created in a fresh folder, listens on its own Unix socket
(trust, superuser ``postgres``) and on 127.0.0.1 at a free port (password auth), and is deleted at
``stop()``. As root, the server runs as the ``postgres`` system user (``initdb`` refuses root).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote


def find_bindir() -> Path | None:
    """The folder holding ``initdb``/``pg_ctl``: ``$PG_BINDIR``, the newest Debian version, or ``$PATH``."""
    env = os.environ.get("PG_BINDIR")
    if env:  # explicit: only there (PG_BINDIR=/nowhere skips the PostgreSQL tests)
        return Path(env) if (Path(env) / "initdb").exists() else None
    candidates: list[Path] = []
    debian = Path("/usr/lib/postgresql")
    if debian.is_dir():
        versions = sorted(
            (p for p in debian.iterdir() if p.name.isdigit()), key=lambda p: int(p.name), reverse=True
        )
        candidates += [p / "bin" for p in versions]
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).parent)
    for c in candidates:
        if (c / "initdb").exists() and (c / "pg_ctl").exists() and (c / "postgres").exists():
            return c
    return None


def _run_as() -> str | None:
    """The system user to run the server as: ``postgres`` when we are root, else ourselves (None)."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return ""
    return "postgres"


def unavailable_reason() -> str | None:
    """Why no cluster can be started here, or None when one can."""
    if find_bindir() is None:
        return (
            "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found; install Debian's "
            "`postgresql` package (scripts/test.sh does when run as root) or set PG_BINDIR to their folder"
        )
    if _run_as() == "":
        return "running as root but there is no `postgres` system user to run the server as"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    """One running cluster; ``url()`` gives a ``postgresql://`` URL for a database on it."""

    fsync: bool = False
    root: Path = field(init=False)
    port: int = field(init=False)

    def __post_init__(self) -> None:
        bindir = find_bindir()
        if bindir is None:
            raise RuntimeError(unavailable_reason())
        self.bindir = bindir
        self.user = _run_as()
        self.root = Path(tempfile.mkdtemp(prefix="nbagent-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        if self.user:
            entry = pwd.getpwnam(self.user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        os.chmod(self.root, 0o700)

    @property
    def socket_dir(self) -> Path:
        return self.root

    def _call(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bindir / args[0]), *args[1:]],
            user=self.user or None,
            capture_output=True,
            text=True,
            check=check,
            timeout=120,
            cwd=self.root,
        )

    def start(self) -> Cluster:
        self._call(
            "initdb", "-D", str(self.data), "-U", "postgres", "-E", "UTF8", "--locale=C",
            "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync",
        )  # fmt: skip
        conf = {
            "listen_addresses": "'127.0.0.1'",
            "port": str(self.port),
            "unix_socket_directories": f"'{self.root}'",
            "fsync": "on" if self.fsync else "off",
            "synchronous_commit": "on" if self.fsync else "off",
            "full_page_writes": "on" if self.fsync else "off",
            "max_connections": "60",
            "shared_buffers": "32MB",
            "log_min_messages": "warning",
        }
        with open(self.data / "postgresql.conf", "a") as f:
            f.writelines(f"{k} = {v}\n" for k, v in conf.items())
        self.pg_ctl("start")
        return self

    def pg_ctl(self, action: str, *extra: str) -> None:
        try:
            self._call("pg_ctl", action, "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", *extra)
        except subprocess.CalledProcessError as exc:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"pg_ctl {action} failed: {exc.stderr}\n{log}") from None

    def restart(self) -> None:
        """``pg_ctl restart`` (fast shutdown: every connection is dropped)."""
        self.pg_ctl("restart", "-m", "fast")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.pg_ctl("stop", "-m", "immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def conninfo(self, dbname: str = "postgres") -> str:
        """A libpq key/value string for the superuser over the Unix socket."""
        return f"host={self.root} port={self.port} user=postgres dbname={dbname}"

    def url(self, dbname: str = "postgres", *, schema: str | None = None) -> str:
        """A ``postgresql://`` URL for the superuser over the Unix socket, optionally in ``schema``."""
        url = f"postgresql:///{dbname}?host={quote(str(self.root), safe='')}&port={self.port}&user=postgres"
        if schema:
            url += "&options=" + quote(f"-c nbagent.schema={schema}", safe="")
        return url

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
