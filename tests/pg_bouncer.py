"""A throwaway PgBouncer in transaction pooling mode in front of a test cluster (:mod:`pg_server`).

Debian's ``pgbouncer``, started like the cluster: a config in the cluster's temp folder, trust
authentication on its own Unix socket and a free port, every database forwarded to the cluster.
As root it runs as the cluster's system user (PgBouncer refuses to run as root).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from urllib.parse import quote

import pg_server


def unavailable_reason() -> str | None:
    if shutil.which("pgbouncer") is None:
        return "PgBouncer not found; install Debian's `pgbouncer` package"
    return pg_server.unavailable_reason()


class Bouncer:
    """One running PgBouncer (``pool_mode = transaction``) in front of ``cluster``."""

    def __init__(self, cluster: pg_server.Cluster, *, pool_size: int = 20) -> None:
        self.cluster = cluster
        self.dir = cluster.root / f"bouncer-{os.getpid()}-{time.monotonic_ns()}"
        self.dir.mkdir()
        self.port = pg_server._free_port()
        self.pool_size = pool_size
        self.proc: subprocess.Popen[bytes] | None = None
        (self.dir / "users.txt").write_text('"postgres" ""\n')
        conf = {
            "listen_addr": "127.0.0.1",
            "listen_port": self.port,
            "unix_socket_dir": self.dir,
            "auth_type": "trust",
            "auth_file": self.dir / "users.txt",
            "pool_mode": "transaction",
            "max_client_conn": 5000,
            "default_pool_size": pool_size,
            "max_db_connections": pool_size,
            "ignore_startup_parameters": "extra_float_digits",
            "admin_users": "postgres",
            "logfile": self.dir / "bouncer.log",
            "pidfile": self.dir / "bouncer.pid",
            "server_login_retry": 1,
            "log_connections": 0,
            "log_disconnections": 0,
        }
        body = f"[databases]\n* = host={cluster.root} port={cluster.port}\n\n[pgbouncer]\n"
        body += "".join(f"{k} = {v}\n" for k, v in conf.items())
        self.ini = self.dir / "pgbouncer.ini"
        self.ini.write_text(body)
        if cluster.user:
            for p in (self.dir, *self.dir.iterdir()):
                shutil.chown(p, cluster.user, cluster.user)

    def start(self) -> Bouncer:
        args = ["pgbouncer", str(self.ini)]
        if self.cluster.user:
            args[1:1] = ["-u", self.cluster.user]
        # Its log goes to the logfile; an unread pipe would fill up and stop it.
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        sock = self.dir / f".s.PGSQL.{self.port}"
        while not sock.exists():  # it listens before it writes its socket file
            if self.proc.poll() is not None:
                log = (self.dir / "bouncer.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"pgbouncer exited:\n{log}")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # immediate shutdown: every client is cut
            self.proc.wait(60)
        self.proc = None
        Path(self.dir / "bouncer.pid").unlink(missing_ok=True)

    def restart(self) -> None:
        self.stop()
        self.start()

    def url(self, dbname: str = "postgres", *, schema: str | None = None) -> str:
        url = f"postgresql:///{dbname}?host={quote(str(self.dir), safe='')}&port={self.port}&user=postgres"
        if schema:
            url += "&options=" + quote(f"-c nbagent.schema={schema}", safe="")
        return url

    def __enter__(self) -> Bouncer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
