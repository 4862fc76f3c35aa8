"""Bounding every PostgreSQL call: server-side timeouts, TCP keepalives, and a client-side deadline.

A statement can wait on three things, and each gets a bound:

- a lock another session holds (a foreign ``LOCK TABLE``): ``lock_timeout``;
- a slow statement: ``statement_timeout`` (the server cancels it);
- a server or network that stops answering: TCP keepalives and ``tcp_user_timeout`` on the
  client, ``tcp_keepalives_*`` on the server (so a writer's backend notices a dead client and
  frees its lease), and — for a peer that still acknowledges packets but never answers, such as
  a stalled proxy — a :class:`Watchdog` that shuts the socket down once a call has gone
  unanswered for the statement timeout plus :data:`ANSWER_GRACE_S`.

Settings the URL or ``PGOPTIONS`` already give (``statement_timeout``, ``lock_timeout``, a
``keepalives*``/``tcp_user_timeout`` parameter) win over these defaults. The server-side bounds
travel as startup options of each pooled connection (:mod:`.pool`), never as a ``SET``: nothing
depends on a database session.
"""

from __future__ import annotations

import os
import re
import socket
import threading
import time
from typing import Any, Protocol

STATEMENT_TIMEOUT_MS = 20_000
LOCK_TIMEOUT_MS = 10_000
"""As long as SQLite's busy timeout: a writer gives up on a lock after 10 s either way."""
ANSWER_GRACE_S = 5.0
"""How long past the statement timeout a call may go unanswered before its connection is cut."""
KEEPALIVES = {
    "keepalives": "1",
    "keepalives_idle": "5",
    "keepalives_interval": "2",
    "keepalives_count": "3",
    "tcp_user_timeout": "10000",
}
"""Client-side TCP settings (libpq parameters): a silent peer is detected within about 11 s."""
SERVER_KEEPALIVES = {"tcp_keepalives_idle": 5, "tcp_keepalives_interval": 2, "tcp_keepalives_count": 3}
"""The same on the server's end of our connection: a backend whose client vanished exits (rolling
back its open transaction) within seconds instead of the server's default two hours."""


def answer_seconds(statement_timeout_ms: int) -> float:
    """How long a call may go unanswered before the watchdog cuts its connection."""
    return statement_timeout_ms / 1000 + ANSWER_GRACE_S


def connect_options(url: str, libpq_version: int) -> dict[str, Any]:
    """The keepalive parameters to pass to ``psycopg.connect`` (those the URL does not set;
    ``tcp_user_timeout`` only where libpq knows it, from version 12)."""
    wanted = {k: v for k, v in KEEPALIVES.items() if k not in url}
    if libpq_version < 120000:
        wanted.pop("tcp_user_timeout", None)
    return wanted


def startup_options(url: str) -> str:
    """The bounds as startup ``options`` (``-c name=value``) for the settings neither the URL nor
    ``PGOPTIONS`` give; sent only to a server that takes them (a pooler in transaction mode refuses
    startup options: there the role's settings and the pooler's ``query_timeout`` bound calls, and
    the watchdog always does)."""
    given = url + " " + os.environ.get("PGOPTIONS", "")
    wanted = {"statement_timeout": STATEMENT_TIMEOUT_MS, "lock_timeout": LOCK_TIMEOUT_MS, **SERVER_KEEPALIVES}
    return " ".join(f"-c {k}={v}" for k, v in wanted.items() if k not in given)


def given_statement_timeout_ms(url: str) -> int:
    """The statement timeout the URL or ``PGOPTIONS`` gives (ms), else nbagent's default."""
    found = re.findall(r"statement_timeout(?:=|%3D)(\d+)", url + " " + os.environ.get("PGOPTIONS", ""))
    return int(found[-1]) if found else STATEMENT_TIMEOUT_MS


class Watched(Protocol):
    stalled: bool

    def socket_fd(self) -> int | None: ...


class Watchdog:
    """One daemon thread per process cutting the connections whose call outlived its deadline.

    ``arm``/``disarm`` bracket each call (a dictionary update under a lock: cheap enough for every
    statement); the thread sleeps until the earliest deadline and wakes only when work appears.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deadlines: dict[int, tuple[float, Watched]] = {}
        self._thread: threading.Thread | None = None

    def arm(self, conn: Watched, seconds: float) -> None:
        with self._cond:
            was_idle = not self._deadlines
            self._deadlines[id(conn)] = (time.monotonic() + seconds, conn)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="nbagent postgres watchdog", daemon=True
                )
                self._thread.start()
            elif was_idle:
                self._cond.notify()

    def disarm(self, conn: Watched) -> None:
        with self._cond:
            self._deadlines.pop(id(conn), None)

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._deadlines:
                    self._cond.wait()
                    continue
                now = time.monotonic()
                key, (deadline, conn) = min(self._deadlines.items(), key=lambda item: item[1][0])
                if deadline > now:
                    self._cond.wait(deadline - now)
                    continue
                del self._deadlines[key]
            _cut(conn)


class WatchedCall:
    """One call's borrowed connection, as the watchdog sees it (``stalled`` once it cut it)."""

    def __init__(self) -> None:
        self.conn: Any = None
        self.stalled = False

    def socket_fd(self) -> int | None:
        try:
            return None if self.conn is None or self.conn.closed else self.conn.pgconn.socket
        except Exception:
            return None


def _cut(conn: Watched) -> None:
    """Shut the connection's socket down: the call blocked on it fails at once (nothing is closed
    under the caller's feet: the descriptor stays the driver's)."""
    conn.stalled = True
    fd = conn.socket_fd()
    if fd is None:
        return
    try:
        dup = socket.socket(fileno=os.dup(fd))
    except OSError:
        return
    try:
        dup.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        dup.close()


WATCHDOG = Watchdog()
