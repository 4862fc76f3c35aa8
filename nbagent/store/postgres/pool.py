"""One small connection pool per PostgreSQL server per process, shared by every store of it (SPEC §6.5).

Every store of a process that names the same server (the URL without the ``nbagent.schema`` it
selects, which is read on the client: :func:`.location.split_schema`) borrows connections from one
``psycopg_pool.ConnectionPool`` for one call at a time, so a kernel with many sessions, and a
server with many readers, holds a few connections at most. Nothing depends on which connection a
call gets: no ``SET``, no session lock, no ``LISTEN``; so the pool works as well through PgBouncer
in transaction pooling mode. A pooler is recognised when it refuses startup ``options`` (PgBouncer
does): then the bounds of :mod:`.watchdog` are not sent, and statements are never prepared on the
server (psycopg ``prepare_threshold=None``), since the next transaction may run on another backend.
``NBAGENT_PG_POOLER=1`` says so without asking (for a pooler told to ignore startup ``options``).
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from nbagent.store.postgres.watchdog import connect_options, startup_options

if TYPE_CHECKING:
    import psycopg

POOL_SIZE = 4
"""Connections one process keeps to one server at most (``NBAGENT_PG_POOL_SIZE`` overrides it)."""
CONNECT_TIMEOUT_S = 10
POOL_WAIT_S = 5.0
"""How long a call waits for a connection (the server or the pooler down) before it fails."""
POOLER_REFUSAL = "unsupported startup parameter"
"""How PgBouncer answers startup ``options``."""

logging.getLogger("psycopg.pool").addHandler(logging.NullHandler())  # no tracebacks on a kernel's stderr


_process_size: int | None = None
"""This process's own pool size, set by code that knows what the process is (a Jupyter server)."""


def set_process_pool_size(size: int) -> None:
    """Size the pools this process opens from now on (at least 1), whatever ``NBAGENT_PG_POOL_SIZE``
    says: a Jupyter server sets 1 for itself without setting it for the kernels it starts, which
    inherit its environment."""
    global _process_size
    _process_size = max(1, int(size))


def pool_size() -> int:
    """The pool's size: this process's own (:func:`set_process_pool_size`), else
    ``NBAGENT_PG_POOL_SIZE`` when set (at least 1), else :data:`POOL_SIZE`."""
    if _process_size is not None:
        return _process_size
    try:
        return max(1, int(os.environ.get("NBAGENT_PG_POOL_SIZE", "")))
    except ValueError:
        return POOL_SIZE


def _configure(conn: psycopg.Connection[Any]) -> None:
    """Client-side set-up of a new pooled connection: ``json`` arrives as the stored text (nbagent
    decodes it, and copies it verbatim). Nothing is sent to the server."""
    from psycopg.types.string import TextBinaryLoader, TextLoader

    conn.adapters.register_loader("json", TextLoader)
    conn.adapters.register_loader("json", TextBinaryLoader)


class SharedPool:
    """The pool of one server (``conninfo``) in this process; ``pooler`` is whether it sits behind
    a pooler that refuses startup options (PgBouncer)."""

    def __init__(self, conninfo: str, application_name: str) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        kwargs: dict[str, Any] = {"autocommit": True, "application_name": application_name}
        if "connect_timeout" not in conninfo and not os.environ.get("PGCONNECT_TIMEOUT"):
            kwargs["connect_timeout"] = CONNECT_TIMEOUT_S
        kwargs.update(connect_options(conninfo, psycopg.pq.version()))
        bounds = startup_options(conninfo)
        self.pooler = os.environ.get("NBAGENT_PG_POOLER") == "1"
        """Behind a pooler in transaction mode: said by ``NBAGENT_PG_POOLER=1``, or found out."""
        if bounds and not self.pooler:
            given = psycopg.conninfo.conninfo_to_dict(conninfo).get("options")
            try:
                probe = psycopg.connect(conninfo, **kwargs, options=f"{bounds} {given or ''}".strip())
            except psycopg.OperationalError as exc:
                if POOLER_REFUSAL not in str(exc):
                    raise
                self.pooler = True
            else:
                probe.close()
                kwargs["options"] = f"{bounds} {given or ''}".strip()
        if self.pooler or not bounds:
            psycopg.connect(conninfo, **kwargs).close()  # the server's own refusal, worded by libpq
        if self.pooler:
            kwargs["prepare_threshold"] = None
        self.pool = ConnectionPool(
            conninfo,
            kwargs=kwargs,
            min_size=1,
            max_size=pool_size(),
            configure=_configure,
            timeout=POOL_WAIT_S,
            name="nbagent",
            num_workers=1,
            open=True,
        )

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for one call (a broken one is dropped by the pool when it comes back)."""
        with self.pool.connection() as conn:
            yield conn

    def drop_dead(self) -> None:
        """Drop the idle connections a restart of the server or pooler left dead (each is tried
        once), so the next call gets a live one; never raises."""
        try:
            self.pool.check()
        except Exception:
            pass

    def close(self) -> None:
        try:
            self.pool.close(timeout=1.0)
        except Exception:
            pass


_pools: dict[str, SharedPool] = {}
_lock = threading.Lock()


def pool_for(conninfo: str, application_name: str) -> SharedPool:
    """This process's pool of the server at ``conninfo`` (opened on first use: raises
    ``psycopg.OperationalError`` when the server cannot be reached)."""
    with _lock:
        pool = _pools.get(conninfo)
        if pool is None or pool.pool.closed:
            pool = _pools[conninfo] = SharedPool(conninfo, application_name)
        return pool


def connections() -> int:
    """How many connections this process's pools hold now (the benchmark's connection budget)."""
    with _lock:
        return sum(p.pool.get_stats().get("pool_size", 0) for p in _pools.values())


@atexit.register
def _close_all() -> None:
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()
