"""The PostgreSQL store: many sessions in one database, in a schema of their own (SPEC §6.5).

Same tables and rows as the SQLite file (``sessions``, ``events``) plus ``meta`` (the application
name and schema version, PostgreSQL's counterpart of ``application_id``/``user_version``), in the
schema ``nbagent`` or the one named by the ``nbagent.schema`` setting. A schema holding anything
else is refused before anything is written. ``events.data`` is ``json``: the server checks every
record on insert and keeps its text byte for byte.

Each open store is one connection. A writer's lease is a session-level advisory lock on it, so a
writer that dies (or loses its connection) releases it at once (``pg_lease.py``). Every call on it
is bounded: statement and lock timeouts, keepalives, and a watchdog (``pg_watchdog.py``), so a
locked table or a silent server fails the call with an error naming the server. Every staged batch is one
transaction that also signals followers (``NOTIFY``). Credentials come from the URL, the ``PG*``
variables or ``~/.pgpass`` (libpq reads them); the store shows and stores only the redacted address.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, unquote, urlsplit

from nbagent import _json
from nbagent.core.events import TURN_START, Event
from nbagent.errors import (
    NbagentError,
    SessionCorruptError,
    SessionFileError,
    SessionNotFoundError,
    SessionWriteError,
)
from nbagent.store import checked_reads
from nbagent.store.base import Mode, Row
from nbagent.store.checked_reads import CheckedReads, EventQuery, Fetched, LogFigures, SessionFigures
from nbagent.store.location import PostgresLocation
from nbagent.store.pg_lease import AdvisoryLease, holder_name, lock_key
from nbagent.store.pg_location import DEFAULT_SCHEMA, SCHEMA_SETTING
from nbagent.store.pg_watchdog import (
    SERVER_KEEPALIVES,
    STATEMENT_TIMEOUT_MS,
    WATCHDOG,
    answer_seconds,
    connect_options,
    session_settings,
)

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")

APPLICATION = "nbagent"
SCHEMA_VERSION = 1
TABLES = frozenset({"meta", "sessions", "events"})
CONNECT_TIMEOUT_S = 10
STATEMENT_ROWS = 1000
"""Rows per ``INSERT`` statement (6 parameters each, far below the protocol's 65535)."""

_DDL = """
CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE {schema}.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE {schema}.sessions (
    id text PRIMARY KEY,
    created_at bigint NOT NULL,
    title text,
    parent text,
    notebook text,
    model text,
    metadata text NOT NULL DEFAULT '{{}}'
);
CREATE TABLE {schema}.events (
    session_id text NOT NULL,
    seq bigint NOT NULL,
    time bigint NOT NULL,
    type text NOT NULL,
    data json NOT NULL,
    inbox_pending integer,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX events_by_type ON {schema}.events (session_id, type, seq);
CREATE INDEX events_inbox_quiet ON {schema}.events (session_id, seq) WHERE inbox_pending = 0
"""


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise NbagentError("a postgresql:// store needs psycopg 3: pip install 'nbagent[postgres]'") from None
    return psycopg


def channel(schema: str) -> str:
    """The ``LISTEN``/``NOTIFY`` channel of a schema; the payload of a notice is a session id."""
    return f"nbagent:{schema}"[:63]


class PostgresStore(CheckedReads):
    """One connection to the nbagent schema of one PostgreSQL database (see ``SessionStore``)."""

    remedy = "restore it from a backup"

    def __init__(self, where: PostgresLocation | str, *, mode: Mode = "read") -> None:
        psycopg = _psycopg()
        self.mode: Mode = mode
        self.where = where if isinstance(where, PostgresLocation) else PostgresLocation(where)
        self._url = url = self.where.url
        self.location = self.path = self.where.shown
        self.lock = threading.RLock()
        self.broken: SessionWriteError | None = None
        self.closed = False
        """Set by :meth:`close` (a closed store is not a lost connection)."""
        self.stalled = False
        """Set by the watchdog when it cut the connection of a call left unanswered."""
        self.backend_pid: int | None = None
        self.answer_s = answer_seconds(STATEMENT_TIMEOUT_MS)
        """How long a call may go unanswered before the watchdog cuts the connection."""
        self._depth = 0
        kwargs: dict[str, Any] = {"autocommit": True}
        if "connect_timeout" not in url and not os.environ.get("PGCONNECT_TIMEOUT"):
            kwargs["connect_timeout"] = CONNECT_TIMEOUT_S
        if mode != "read":
            kwargs["application_name"] = holder_name()
        kwargs.update(connect_options(url, psycopg.pq.version()))
        try:
            self.conn: psycopg.Connection[Any] = psycopg.connect(url, **kwargs)
        except psycopg.Error as exc:
            raise SessionFileError(
                f"cannot connect to {self.location}: {self._say(exc)}; check the URL, the PG* "
                "variables or ~/.pgpass, and that the server is running"
            ) from None
        try:
            self._setup(psycopg)
        except BaseException:
            self.conn.close()
            raise

    # -- opening --------------------------------------------------------------------------------

    def _setup(self, psycopg: Any) -> None:
        from psycopg import sql
        from psycopg.types.string import TextBinaryLoader, TextLoader

        conn = self.conn
        # events.data arrives as the stored text; nbagent decodes it (and copies it verbatim).
        conn.adapters.register_loader("json", TextLoader)
        conn.adapters.register_loader("json", TextBinaryLoader)
        self._bound_calls()
        setting, encoding = self.run(
            lambda c: c.execute(
                "SELECT current_setting(%s, true), current_setting('server_encoding')", (SCHEMA_SETTING,)
            ).fetchone()
        )
        self.schema = (setting or "").strip() or DEFAULT_SCHEMA
        if self.schema != DEFAULT_SCHEMA:
            self.location = self.path = f"{self.location} (schema {self.schema})"
        if encoding.upper() not in ("UTF8", "UTF-8"):
            raise SessionFileError(
                f"{self.location} uses the {encoding} encoding; nbagent needs a UTF8 database — "
                "create one with CREATE DATABASE … ENCODING 'UTF8'"
            )
        if self.mode == "read":
            self.run(lambda c: c.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"))
        self.channel = channel(self.schema)
        s = sql.Identifier(self.schema)

        def q(text: str) -> bytes:
            return sql.SQL(text).format(schema=s).as_bytes(conn)

        self._q = q
        self._statements: dict[tuple[bool, int, bool], bytes] = {}
        self.empty = self._identify(psycopg)
        if self.empty:
            if self.mode == "create":
                self._initialise(psycopg)
                self.empty = False
            elif self.mode == "write":
                raise SessionNotFoundError(f"{self.location} holds no session; start one with open_session()")

    def _identify(self, psycopg: Any) -> bool:
        """Refuse a foreign or newer schema, changing nothing; return whether it is empty or missing."""
        names = self.run(
            lambda c: {
                r[0]
                for r in c.execute(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')",
                    (self.schema,),
                )
            }
        )
        if not names:
            return True
        if "meta" not in names:
            raise SessionFileError(
                f"schema {self.schema} of {self.location} holds tables that are not nbagent's "
                f"({', '.join(sorted(names)[:8])}); nbagent left it unchanged — use another database, "
                f"or another schema with the {SCHEMA_SETTING} setting "
                f"(URL: ?options=-c%20{SCHEMA_SETTING}%3Dname)"
            )
        try:
            meta = dict(
                self.run(lambda c: c.execute(self._q("SELECT key, value FROM {schema}.meta")).fetchall())
            )
        except SessionFileError as exc:
            raise SessionFileError(
                f"schema {self.schema} of {self.location} has a table `meta` nbagent cannot read "
                f"({exc}); nbagent left it unchanged — use another schema or database"
            ) from None
        if meta.get("application") != APPLICATION:
            raise SessionFileError(
                f"schema {self.schema} of {self.location} belongs to another application "
                f"({meta.get('application')!r}); nbagent left it unchanged — use another schema "
                f"({SCHEMA_SETTING}) or database"
            )
        try:
            version = int(meta.get("version", ""))
        except ValueError:
            raise SessionCorruptError(
                f"schema {self.schema} of {self.location} has no readable nbagent schema version"
            ) from None
        if version > SCHEMA_VERSION:
            raise SessionFileError(
                f"schema {self.schema} of {self.location} has nbagent schema version {version}, newer than "
                f"this nbagent understands ({SCHEMA_VERSION}); upgrade nbagent to open it"
            )
        if not names >= TABLES:
            raise SessionCorruptError(
                f"schema {self.schema} of {self.location} is nbagent's but misses tables "
                f"{sorted(TABLES - names)}; restore it from a backup or use another schema"
            )
        return False

    def _initialise(self, psycopg: Any) -> None:
        """Create the schema in one transaction, serialised with other first users by a lock."""
        q = self._q

        def init(c: psycopg.Connection[Any]) -> None:
            with c.transaction():
                c.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(self.schema, ""),))
                if not self._identify(psycopg):
                    return  # another process created it meanwhile
                for stmt in _DDL.split(";"):
                    c.execute(q(stmt))
                c.execute(
                    q("INSERT INTO {schema}.meta VALUES ('application', %s), ('version', %s)"),
                    (APPLICATION, str(SCHEMA_VERSION)),
                )

        self.run(init, doing="creating the nbagent schema in")

    def _bound_calls(self) -> None:
        """Give this connection the statement, lock and keepalive bounds it lacks (``pg_watchdog``)."""
        pid, current = self.run(
            lambda c: c.execute(
                "SELECT pg_backend_pid(), (SELECT json_object_agg(name, CASE WHEN source = 'default' "
                "THEN '0' ELSE setting END) FROM pg_settings WHERE name = ANY(%s))",
                (["statement_timeout", "lock_timeout", *SERVER_KEEPALIVES],),
            ).fetchone()
        )
        self.backend_pid = pid
        current = {k: int(v) for k, v in _json.loads(current or "{}").items()}
        wanted = session_settings(current)
        if wanted:
            calls = ", ".join("set_config(%s, %s, false)" for _ in wanted)
            args = [x for k, v in wanted.items() for x in (k, str(v))]
            self.run(lambda c: c.execute(f"SELECT {calls}", args))
        statement_ms = wanted.get("statement_timeout") or current.get("statement_timeout", 0)
        self.answer_s = answer_seconds(statement_ms)

    # -- the connection -------------------------------------------------------------------------

    def socket_fd(self) -> int | None:
        """The connection's socket (for the watchdog), or ``None`` once closed."""
        try:
            return None if self.conn.closed else self.conn.pgconn.socket
        except Exception:
            return None

    def run(self, fn: Callable[[psycopg.Connection[Any]], T], *, doing: str = "reading") -> T:
        """Run ``fn`` on the connection under the store's lock; database errors become nbagent's."""
        psycopg = _psycopg()
        with self.lock:
            if self.broken is not None:
                raise self.broken
            if self.conn.closed and self.closed:
                raise SessionFileError(f"the connection to {self.location} is closed")
            self._depth += 1
            if self._depth == 1:
                WATCHDOG.arm(self, self.answer_s)
            try:
                return fn(self.conn)
            except psycopg.Error as exc:
                raise self._error(exc, doing) from exc
            finally:
                self._depth -= 1
                if not self._depth:
                    WATCHDOG.disarm(self)

    def _error(self, exc: BaseException, doing: str) -> SessionFileError:
        if self.conn.broken or self.conn.closed:
            return self._lost(exc)
        cls = SessionWriteError if doing.startswith("writing") else SessionFileError
        tail = "; nothing was recorded" if cls is SessionWriteError else ""
        return cls(f"{doing} {self.location} failed: {self._say(exc)}{tail}")

    def _lost(self, exc: BaseException) -> SessionWriteError:
        if self.broken is None:
            cause = (
                f"no answer for {self.answer_s:g} s, so nbagent cut it: the server or the network "
                "stopped responding"
                if self.stalled
                else self._say(exc)
            )
            self.broken = SessionWriteError(
                f"lost the connection to {self.location} ({cause}); the session's write lease "
                "went with it, so this agent records nothing more — events it had not confirmed may or "
                "may not be stored. Resume the session (resume_session() or %agent resume) once the "
                "server is reachable"
            )
        return self.broken

    def _say(self, exc: BaseException) -> str:
        """The first line of a database error, with any password masked."""
        text = str(exc).strip()
        line = text.splitlines()[0] if text else type(exc).__name__
        for secret in _secrets(self._url):
            line = line.replace(secret, "***")
        return line

    def lease(self, session_id: str) -> AdvisoryLease:
        return AdvisoryLease(self, session_id)

    def reader(self) -> PostgresStore:
        """Another, read-only connection to the same store (for lazy reads beside a writer)."""
        return PostgresStore(self.where, mode="read")

    def close(self, *, checkpoint: bool = True) -> None:
        """Close the connection (releasing any lease it holds); never raises."""
        with self.lock:
            self.closed = True
            try:
                self.conn.close()
            except Exception:
                pass

    # -- writes ---------------------------------------------------------------------------------

    def write(self, rows: Sequence[Row], *, session: tuple[Any, ...] | None = None) -> None:
        """Insert ``rows`` (and optionally a new session row) atomically, notifying followers.

        A batch of up to ``STATEMENT_ROWS`` rows is one statement (its own transaction: one round
        trip); a bigger one is several statements in one transaction.
        """
        if not rows and session is None:
            return
        sid = rows[0][0] if rows else session[0]  # type: ignore[index]
        chunks = [rows[i : i + STATEMENT_ROWS] for i in range(0, len(rows), STATEMENT_ROWS)] or [()]

        def write(c: psycopg.Connection[Any]) -> None:
            if len(chunks) == 1:
                c.execute(*self._insert(session, chunks[0], notify=sid))
                return
            with c.transaction():
                c.execute(*self._insert(session, chunks[0], notify=None))
                for chunk in chunks[1:-1]:
                    c.execute(*self._insert(None, chunk, notify=None))
                c.execute(*self._insert(None, chunks[-1], notify=sid))

        self.run(write, doing="writing to")

    def _insert(
        self, session: tuple[Any, ...] | None, rows: Sequence[Row], *, notify: str | None
    ) -> tuple[bytes, list[Any]]:
        """One statement inserting ``session`` and ``rows`` (and notifying when ``notify`` is set)."""
        key = (session is not None, len(rows), notify is not None)
        text = self._statements.get(key)
        if text is None:
            parts = []
            if session is not None:
                parts.append("s AS (INSERT INTO {schema}.sessions VALUES (%s, %s, %s, %s, %s, %s, %s))")
            if rows:
                values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(rows))
                parts.append(f"e AS (INSERT INTO {{schema}}.events VALUES {values})")
            final = "SELECT pg_notify(%s, %s)" if notify is not None else "SELECT 1"
            text = self._q(f"WITH {', '.join(parts)} {final}")
            if len(self._statements) < 64:
                self._statements[key] = text
        args: list[Any] = list(session) if session is not None else []
        for row in rows:
            args.extend(row)
        if notify is not None:
            args += [self.channel, notify]
        return text, args

    def update_session(self, session_id: str, **fields: Any) -> None:
        """Update out-of-log metadata (title, model, notebook, metadata)."""
        from psycopg import sql

        if "metadata" in fields:
            fields["metadata"] = _json.dumps(fields["metadata"])
        query = sql.SQL("UPDATE {}.sessions SET {} WHERE id = %s").format(
            sql.Identifier(self.schema),
            sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(k)) for k in fields),
        )
        self.run(lambda c: c.execute(query, (*fields.values(), session_id)), doing="writing to")

    def copy_within(self, parent: str, stop: int, session: Sequence[Any], own: Sequence[Row]) -> None:
        """Create ``session`` holding ``parent``'s rows up to ``stop`` and then ``own``, in one
        transaction, the rows copied by the server itself (a fork within this schema)."""
        q = self._q

        def copy(c: psycopg.Connection[Any]) -> None:
            with c.transaction():
                c.execute(q("INSERT INTO {schema}.sessions VALUES (%s, %s, %s, %s, %s, %s, %s)"), session)
                c.execute(
                    q(
                        "INSERT INTO {schema}.events SELECT %s, seq, time, type, data, inbox_pending "
                        "FROM {schema}.events WHERE session_id = %s AND seq <= %s ORDER BY seq"
                    ),
                    (session[0], parent, stop),
                )
                for row in own:
                    c.execute(q("INSERT INTO {schema}.events VALUES (%s, %s, %s, %s, %s, %s)"), row)

        self.run(copy, doing="writing to")

    # -- fetching, for the shared reads and checks (:class:`CheckedReads`) -------------------------

    _SESSION_SELECT = (
        "SELECT s.id, s.created_at, s.title, s.parent, s.notebook, s.model, s.metadata, last.seq, "
        "last.time, (SELECT count(*) FROM {schema}.events t WHERE t.session_id = s.id AND t.type = %s) "
        "FROM {schema}.sessions s LEFT JOIN LATERAL (SELECT e.seq, e.time FROM {schema}.events e "
        "WHERE e.session_id = s.id ORDER BY e.seq DESC LIMIT 1) last ON true"
    )

    def _holds_sessions(self) -> bool:
        return not self.empty

    def _fetch_sessions(self, session_id: str | None) -> list[SessionFigures]:
        if session_id is None:
            sql, args = self._q(self._SESSION_SELECT), (TURN_START,)
        else:
            sql, args = self._q(self._SESSION_SELECT + " WHERE s.id = %s"), (TURN_START, session_id)
        rows = self.run(lambda c: c.execute(sql, args).fetchall())
        return [SessionFigures(row[:7], row[7], row[8], row[9]) for row in rows]

    def _fetch_last(self, session_id: str) -> Fetched | None:
        sql = self._q("SELECT seq, time FROM {schema}.events WHERE session_id = %s ORDER BY seq DESC LIMIT 1")
        return self.run(lambda c: c.execute(sql, (session_id,)).fetchone())

    def _fetch_log(self, session_id: str) -> LogFigures:
        """Every record is valid JSON by construction: the server checks ``json`` values on insert."""
        sql = self._q("SELECT count(*), max(seq) FROM {schema}.events WHERE session_id = %s")
        count, last = self.run(lambda c: c.execute(sql, (session_id,)).fetchone())
        if not count:
            return LogFigures(0, -1, 0, None)
        return LogFigures(count, last, self.tail(session_id)[1], None)

    def _fetch_first_gap(self, session_id: str) -> tuple[int, int]:
        gap = self._q(
            "SELECT seq FROM (SELECT seq, row_number() OVER (ORDER BY seq) - 1 AS want "
            "FROM {schema}.events WHERE session_id = %s) x WHERE seq <> want ORDER BY seq LIMIT 1"
        )
        (before,) = self.run(lambda c: c.execute(gap, (session_id,)).fetchone())
        count = self._q("SELECT count(*) FROM {schema}.events WHERE session_id = %s AND seq < %s")
        return self.run(lambda c: c.execute(count, (session_id, before)).fetchone()[0]), before

    def checks_may_wait(self, session_id: str) -> bool:
        """No checks wait for the first write here: the server checked every record on insert."""
        return False

    def check_before_first_write(self, session_id: str) -> None:
        """Nothing is owed (see :meth:`checks_may_wait`)."""

    def _fetch_last_of_type(self, session_id: str, type_: str) -> Fetched | None:
        sql = self._q(
            "SELECT seq, time, type, data FROM {schema}.events WHERE session_id = %s AND type = %s "
            "ORDER BY seq DESC LIMIT 1"
        )
        return self.run(lambda c: c.execute(sql, (session_id, type_)).fetchone())

    def _fetch_last_quiet(self, session_id: str) -> int | None:
        sql = self._q("SELECT max(seq) FROM {schema}.events WHERE session_id = %s AND inbox_pending = 0")
        return self.run(lambda c: c.execute(sql, (session_id,)).fetchone()[0])

    def _select(self, columns: str, session_id: str, query: EventQuery) -> tuple[bytes, list[Any]]:
        text, args = checked_reads.select_events(columns, "{schema}.events", session_id, query, "%s")
        return self._q(text), args

    def _fetch_events(self, session_id: str, query: EventQuery) -> list[Event]:
        sql, args = self._select("seq, time, type, data", session_id, query)

        def read(c: psycopg.Connection[Any]) -> list[Event]:
            with c.cursor(binary=True) as cur:
                cur.execute(sql, args)
                rows = cur.fetchall()
            return self._decode(rows, lambda: rows)

        return self.run(read)

    def _fetch_raw(self, session_id: str, query: EventQuery) -> list[Fetched]:
        columns = "session_id, seq, time, type, data, inbox_pending"
        sql, args = self._select(columns, session_id, query)
        return self.run(lambda c: c.execute(sql, args).fetchall())

    def _fetch_stored_session(self, session_id: str) -> Fetched | None:
        sql = self._q("SELECT * FROM {schema}.sessions WHERE id = %s")
        return self.run(lambda c: c.execute(sql, (session_id,)).fetchone())


def _secrets(url: str) -> list[str]:
    """The passwords that could appear in a libpq message: the URL's, and ``PGPASSWORD``."""
    found = [os.environ.get("PGPASSWORD", "")]
    try:
        found.append(unquote(urlsplit(url.strip()).password or ""))
    except ValueError:
        pass
    found += [unquote(v) for v in parse_qs(urlsplit(url.strip()).query).get("password", [])]
    return [s for s in found if s]
