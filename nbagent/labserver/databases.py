"""The team databases a lab server serves: PostgreSQL stores it knows by name (SPEC §6.5, §9.6).

The server's own configuration names them, never the page::

    c.NbagentServer.databases = {"team": "postgresql://alice@db.internal/nbagent"}

and, unless ``c.NbagentServer.serve_nbagent_db = False``, the server's ``NBAGENT_DB`` when it is a
``postgresql://`` URL (what its kernels write to), under the name ``NBAGENT_DB``. The page asks
for a database by its name (``?db=team``); an unknown name is 404, and a URL is refused (400): the
server connects only where its operator said. A database's URL (its password above all) never
reaches the page, a log line or an error: messages name it ``database 'team'``.

A page following a session of a database waits for its next change (``timeline?…&known=SEQ&wait=S``,
:func:`long_poll`) through the process's one listening connection of that server
(:mod:`nbagent.store.postgres.listen`): a waiting request holds no thread and no connection of its own.
Every read of a database runs in threads of its own (a database that stops answering never holds up
the session files' reads) and is answered within :data:`ANSWER_S`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from traitlets import Bool, Dict, Int, Unicode
from traitlets.config import Configurable

from nbagent.errors import NbagentError
from nbagent.labserver.paths import PathRefused
from nbagent.redaction import scrub
from nbagent.store.location import PostgresLocation, parse_location
from nbagent.store.postgres.pool import set_process_pool_size

if TYPE_CHECKING:
    from nbagent.store.postgres.store import PostgresStore

T = TypeVar("T")
ENV_NAME = "NBAGENT_DB"
"""The name the server's ``NBAGENT_DB`` database is served under."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""What a database's name may be: letters, digits, ``_.-``, at most 64 characters."""
MAX_WAIT_S = 30
"""Seconds one ``wait=`` request may wait for a change (then it answers 204: ask again)."""
ANSWER_S = 30.0
"""Seconds one request to a database may take before it is answered 504 (its thread is freed by
the store's own bounds: statement timeout and watchdog, :mod:`nbagent.store.postgres.watchdog`)."""
DATABASE_READS = "nbagent_database_executor"
"""The setting holding the databases' reader threads."""
SETTING = "nbagent_databases"
"""The setting holding the server's :class:`Databases`."""


class NbagentServer(Configurable):
    """nbagent's settings of a Jupyter server (``c.NbagentServer.…`` in ``jupyter_server_config.py``)."""

    databases = Dict(
        value_trait=Unicode(),
        key_trait=Unicode(),
        default_value={},
        help="PostgreSQL stores the Agent sessions panel lists, by name: {'team': 'postgresql://…'}. "
        "The page asks for a database by its name only; its URL stays on the server.",
    ).tag(config=True)
    pool_size = Int(
        1,
        help="Connections the server's pool keeps to each database at most (its one LISTEN "
        "connection comes on top). Kernels it starts are not affected: they size their own pools "
        "(NBAGENT_PG_POOL_SIZE, default 4).",
    ).tag(config=True)
    serve_nbagent_db = Bool(
        True,
        help="Also list the server's NBAGENT_DB, when it is a postgresql:// URL, as the database 'NBAGENT_DB'.",
    ).tag(config=True)


@dataclass(frozen=True)
class Database:
    """A database the server serves: its name (all the page knows) and its location."""

    name: str
    real: PostgresLocation

    @property
    def api(self) -> str:
        """How the API names it (where a file's API path would stand)."""
        return self.name

    def words(self, text: str) -> str:
        """``text`` as the page may read it: the database named by its name, no password in it."""
        return scrub(text.replace(self.real.shown, f"database {self.name!r}"))


class Databases:
    """The databases of one server, by name, and the store each one's followers wait through."""

    def __init__(self, configured: Mapping[str, str], log: logging.Logger | None = None) -> None:
        self._by_name: dict[str, Database] = {}
        self._follow: dict[str, PostgresStore] = {}
        self._lock = threading.Lock()
        log = log or logging.getLogger(__name__)
        for name, url in configured.items():
            if not NAME.fullmatch(name):
                log.warning(
                    "nbagent: database name %r is not served: use letters, digits and _.- only", name[:80]
                )
            elif not isinstance(where := _url(url), PostgresLocation):
                log.warning(
                    "nbagent: database %r is not served: its value is not a usable postgresql:// URL", name
                )
            else:
                self._by_name[name] = Database(name, where)

    @classmethod
    def from_config(cls, serverapp: Any) -> Databases:
        """The databases ``c.NbagentServer`` names, and ``NBAGENT_DB`` unless told otherwise."""
        settings = NbagentServer(config=serverapp.config)
        set_process_pool_size(settings.pool_size)
        configured = dict(settings.databases)
        env = os.environ.get(ENV_NAME, "").strip()
        if (
            settings.serve_nbagent_db
            and isinstance(_url(env), PostgresLocation)
            and ENV_NAME not in configured
        ):
            configured[ENV_NAME] = env
        return cls(configured, getattr(serverapp, "log", None))

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def shown(self) -> str:
        """The databases for the server's log: name and address without password."""
        return ", ".join(f"{n} ({d.real.shown})" for n, d in sorted(self._by_name.items())) or "none"

    def resolve(self, name: str) -> Database:
        """The database named ``name``; raises :class:`PathRefused` (400 a URL, 404 unknown)."""
        if "://" in name or "=" in name:
            raise PathRefused(
                400,
                "db takes the name of a database this server serves, never a URL or connection string; "
                "the server's operator names them (c.NbagentServer.databases)",
            )
        found = self._by_name.get(name)
        if found is None:
            known = ", ".join(self.names()) or "none"
            raise PathRefused(
                404,
                f"this server serves no database named {name[:80]!r} (it serves: {known}); "
                "its operator names them in c.NbagentServer.databases",
            )
        return found

    def follow_store(self, db: Database) -> PostgresStore:
        """The read-only store the followers of ``db`` wait through (opened once; blocking)."""
        with self._lock:
            found = self._follow.get(db.name)
        if found is not None:
            return found
        from nbagent.store.postgres.store import PostgresStore

        store = PostgresStore(db.real, mode="read")
        with self._lock:
            return self._follow.setdefault(db.name, store)


def _url(text: str) -> PostgresLocation | None:
    """``text`` as a PostgreSQL location, or ``None`` (a path, or a URL that cannot be used)."""
    if not text:
        return None
    try:
        where = parse_location(text)
    except NbagentError:
        return None
    return where if isinstance(where, PostgresLocation) else None


async def _until(event: asyncio.Event, deadline: float) -> bool:
    """Whether ``event`` is set before ``deadline`` (the loop's clock)."""
    left = deadline - asyncio.get_running_loop().time()
    if left <= 0:
        return event.is_set()
    try:
        await asyncio.wait_for(event.wait(), left)
    except asyncio.TimeoutError:
        return event.is_set()
    return True


async def long_poll(
    store: PostgresStore,
    session_id: str,
    *,
    known: int,
    seconds: float,
    answer: Callable[[], Awaitable[T | None]],
) -> T | None:
    """``answer()`` each time session ``session_id`` may have moved past ``known`` (a bundle's
    ``seq``: the log's length it folded), until it is not ``None`` or ``seconds`` have passed
    (then ``None``). The waiting is one follower of the process's listener: no thread, no
    connection; a notice (or the listener's rescan) wakes it."""
    from nbagent.store.follow import RESCAN_S
    from nbagent.store.postgres.listen import Follower, listener_for

    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    listener = listener_for(store)
    me = Follower(store, session_id, RESCAN_S, loop, last=known - 1 if known > 0 else None)
    listener.add(me)
    try:
        if not await _until(me.ready, deadline):
            return None
        while True:
            me.changed.clear()  # before reading: a commit during the read wakes the next wait
            body = await answer()
            if body is not None or not await _until(me.changed, deadline):
                return body
    finally:
        listener.discard(me)
