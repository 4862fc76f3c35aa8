"""The PostgreSQL store: many sessions in one database, in a schema of their own (SPEC §6.5).

Same tables and rows as the SQLite file (``sessions``, ``events``) plus ``meta`` (the application
name and schema version, PostgreSQL's counterpart of ``application_id``/``user_version``), in the
schema ``nbagent`` or the one named by the ``nbagent.schema`` setting. A schema holding anything
else is refused before anything is written. ``events.data`` is ``json``: the server checks every
record on insert and keeps its text byte for byte.

A store holds no connection of its own: each call borrows one from its process's pool of that
server (``pool.py``) for one transaction, so nothing depends on a database session and the store
works through PgBouncer in transaction pooling mode. A writer's lease is a row with an expiry and
a fencing token (``lease.py``); every append checks the token in its own statement. Every call
is bounded: statement and lock timeouts, keepalives, and a watchdog (``watchdog.py``), so a
locked table or a silent server fails the call with an error naming the server. A restart of the
server or the pooler fails the calls made while it is down; the next call after it is back gets a
fresh connection (a write whose answer was lost is looked up, and written again only if it was not
stored). Every staged batch is one transaction that also signals followers (``NOTIFY``). Credentials come from the URL, the ``PG*``
variables or ``~/.pgpass`` (libpq reads them); the store shows and stores only the redacted address.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from nbagent import _json
from nbagent.errors import (
    NbagentError,
    SessionCorruptError,
    SessionFileError,
    SessionLockedError,
    SessionNotFoundError,
    SessionWriteError,
)
from nbagent.log.events import TURN_START, Event
from nbagent.store import checked_reads
from nbagent.store.base import Mode, Row
from nbagent.store.checked_reads import CheckedReads, EventQuery, Fetched, LogFigures, SessionFigures
from nbagent.store.location import PostgresLocation
from nbagent.store.postgres.lease import LEASES_DDL, RowLease, describe_holder, holder_name, lease_seconds
from nbagent.store.postgres.location import DEFAULT_SCHEMA, SCHEMA_SETTING, split_schema, url_secrets
from nbagent.store.postgres.pool import pool_for
from nbagent.store.postgres.tables import APPLICATION, DDL, SCHEMA_VERSION, TABLES, TABLES_V1, schema_lock
from nbagent.store.postgres.watchdog import WATCHDOG, WatchedCall, answer_seconds, given_statement_timeout_ms
from nbagent.store.postgres.writes import NOTIFIER, Statements

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")

STATEMENT_ROWS = 1000
"""Rows per ``INSERT`` statement (6 parameters each, far below the protocol's 65535)."""


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise NbagentError("a postgresql:// store needs psycopg 3: pip install 'nbagent[postgres]'") from None
    return psycopg


def channel(schema: str) -> str:
    """The ``LISTEN``/``NOTIFY`` channel of a schema; the payload of a notice is a session id."""
    return f"nbagent:{schema}"[:63]


def _one(cursor: psycopg.Cursor[Any]) -> Any:
    """The row of a statement that always returns one (an aggregate, ``current_setting``, the first
    gap of a log whose count says it has one)."""
    row = cursor.fetchone()
    assert row is not None, "the statement returns one row"
    return row


class PostgresStore(CheckedReads):
    """The nbagent schema of one PostgreSQL database, reached through this process's pool of that
    server (see ``SessionStore``)."""

    remedy = "restore it from a backup"

    def __init__(self, where: PostgresLocation | str, *, mode: Mode = "read") -> None:
        psycopg = _psycopg()
        self.mode: Mode = mode
        self.where = where if isinstance(where, PostgresLocation) else PostgresLocation(where)
        self._url = self.where.url
        self.location = self.path = self.where.shown
        self.closed = False
        """Set by :meth:`close`."""
        self.tokens: dict[str, int] = {}
        """The fencing token of each session whose lease this store holds (``lease.py``)."""
        self._in_doubt: dict[str, tuple[int, int]] = {}
        """Sessions whose last write lost its connection before its answer: its seq range."""
        named, self.conninfo = split_schema(self._url)
        try:
            self.pool = pool_for(self.conninfo, holder_name())
        except psycopg.Error as exc:
            raise SessionFileError(
                f"cannot connect to {self.location}: {self._say(exc)}; check the URL, the PG* "
                "variables or ~/.pgpass, and that the server is running"
            ) from None
        self.answer_s = answer_seconds(given_statement_timeout_ms(self.conninfo))
        """How long a call may go unanswered before the watchdog cuts its connection."""
        self._setup(psycopg, named)

    # -- opening --------------------------------------------------------------------------------

    def _setup(self, psycopg: Any, named: str | None) -> None:
        from psycopg import sql

        setting, encoding = self.run(
            lambda c: _one(
                c.execute(
                    "SELECT current_setting(%s, true), current_setting('server_encoding')", (SCHEMA_SETTING,)
                )
            )
        )
        self.schema = named or (setting or "").strip() or DEFAULT_SCHEMA
        self.key = f"{self.conninfo}\0{self.schema}"
        if self.schema != DEFAULT_SCHEMA:
            self.location = self.path = f"{self.location} (schema {self.schema})"
        if encoding.upper() not in ("UTF8", "UTF-8"):
            raise SessionFileError(
                f"{self.location} uses the {encoding} encoding; nbagent needs a UTF8 database — "
                "create one with CREATE DATABASE … ENCODING 'UTF8'"
            )
        self.channel = channel(self.schema)
        s = sql.Identifier(self.schema)
        cache: dict[str, bytes] = {}

        def q(text: str) -> bytes:
            """``text`` with ``{schema}`` filled in (cached: the same few statements recur)."""
            found = cache.get(text)
            if found is None:
                found = sql.SQL(text).format(schema=s).as_string(None).encode()
                if len(cache) < 256:
                    cache[text] = found
            return found

        self.q = self._q = q
        self._writes = Statements(q, self.channel)
        version = self._identify(psycopg)
        self.empty = version is None
        if version is None:
            if self.mode == "create":
                self._initialise(psycopg)
                self.empty = False
            elif self.mode == "write":
                raise SessionNotFoundError(f"{self.location} holds no session; start one with open_session()")
        elif version < SCHEMA_VERSION and self.mode != "read":
            self._migrate(psycopg)

    def _identify(self, psycopg: Any, conn: psycopg.Connection[Any] | None = None) -> int | None:
        """Refuse a foreign or newer schema, changing nothing; return its version (``None`` when it is
        empty or missing). On ``conn`` when given (inside a transaction), else on a pooled one."""

        def on(fn: Callable[[psycopg.Connection[Any]], T]) -> T:
            return fn(conn) if conn is not None else self.run(fn)

        names = on(
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
            return None
        if "meta" not in names:
            raise SessionFileError(
                f"schema {self.schema} of {self.location} holds tables that are not nbagent's "
                f"({', '.join(sorted(names)[:8])}); nbagent left it unchanged — use another database, "
                f"or another schema with the {SCHEMA_SETTING} setting "
                f"(URL: ?options=-c%20{SCHEMA_SETTING}%3Dname)"
            )
        try:
            meta = dict(on(lambda c: c.execute(self._q("SELECT key, value FROM {schema}.meta")).fetchall()))
        except (SessionFileError, psycopg.Error) as exc:
            raise SessionFileError(
                f"schema {self.schema} of {self.location} has a table `meta` nbagent cannot read "
                f"({self._say(exc)}); nbagent left it unchanged — use another schema or database"
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
        wanted = TABLES if version >= SCHEMA_VERSION else TABLES_V1
        if not names >= wanted:
            raise SessionCorruptError(
                f"schema {self.schema} of {self.location} is nbagent's but misses tables "
                f"{sorted(wanted - names)}; restore it from a backup or use another schema"
            )
        return version

    def _initialise(self, psycopg: Any) -> None:
        """Create the schema in one transaction, serialised with other first users by a lock."""
        q = self._q

        def init(c: psycopg.Connection[Any]) -> None:
            with c.transaction():
                c.execute("SELECT pg_advisory_xact_lock(%s)", (schema_lock(self.schema),))
                if self._identify(psycopg, c) is not None:
                    return  # another process created it meanwhile
                for stmt in DDL.split(";"):
                    c.execute(q(stmt))
                c.execute(
                    q("INSERT INTO {schema}.meta VALUES ('application', %s), ('version', %s)"),
                    (APPLICATION, str(SCHEMA_VERSION)),
                )

        self.run(init, doing="creating the nbagent schema in")

    def _migrate(self, psycopg: Any) -> None:
        """Bring a version-1 schema to this version in one transaction (a writer does, once): the
        ``leases`` table replaces the advisory locks of version 1, whose writers refuse version 2."""
        q = self._q

        def migrate(c: psycopg.Connection[Any]) -> None:
            with c.transaction():
                c.execute("SELECT pg_advisory_xact_lock(%s)", (schema_lock(self.schema),))
                if self._identify(psycopg, c) != 1:
                    return  # migrated meanwhile
                c.execute(q(LEASES_DDL))
                c.execute(
                    q("UPDATE {schema}.meta SET value = %s WHERE key = 'version'"), (str(SCHEMA_VERSION),)
                )

        self.run(migrate, doing="upgrading the nbagent schema in")

    # -- the connection -------------------------------------------------------------------------

    def run(self, fn: Callable[[psycopg.Connection[Any]], T], *, doing: str = "reading") -> T:
        """Run ``fn`` on a pooled connection (one transaction or statement); database errors become
        nbagent's. A read that finds its connection dead (the server or pooler restarted) is tried
        once more on a fresh one; a write is not (:meth:`write` settles it)."""
        try:
            return self._call(fn, doing)
        except _LostError as lost:
            if doing != "reading" or lost.stalled:
                raise
        return self._call(fn, doing)

    def _call(self, fn: Callable[[psycopg.Connection[Any]], T], doing: str) -> T:
        psycopg = _psycopg()
        if self.closed:
            raise SessionFileError(f"the store {self.location} is closed")
        call = WatchedCall()
        try:
            with self.pool.connection() as conn:
                call.conn = conn
                WATCHDOG.arm(call, self.answer_s)
                try:
                    return fn(conn)
                finally:
                    WATCHDOG.disarm(call)
        except psycopg.Error as exc:
            conn = call.conn
            if conn is not None and not (conn.broken or conn.closed or call.stalled):
                cls = SessionWriteError if doing.startswith("writing") else SessionFileError
                tail = "; nothing was recorded" if cls is SessionWriteError else ""
                raise cls(f"{doing} {self.location} failed: {self._say(exc)}{tail}") from exc
            if not call.stalled:
                self.pool.drop_dead()
            raise self._lost(exc, call, doing) from exc

    def _lost(self, exc: BaseException, call: WatchedCall, doing: str) -> _LostError:
        if call.stalled:
            cause = (
                f"no answer for {self.answer_s:g} s, so nbagent cut it: the server or the network "
                "stopped responding"
            )
        elif call.conn is None:
            cause = f"no connection within the pool's wait: {self._say(exc)}"
        else:
            cause = self._say(exc)
        tail = (
            "; what this call wrote is looked up on the next write. Try again once the server (or the "
            "pooler) is back: the session need not be reopened"
            if doing.startswith("writing")
            else "; try again once the server (or the pooler) is back"
        )
        return _LostError(f"lost the connection to {self.location} ({cause}){tail}", stalled=call.stalled)

    def _say(self, exc: BaseException) -> str:
        """The first line of a database error, with any password masked."""
        text = str(exc).strip()
        line = text.splitlines()[0] if text else type(exc).__name__
        for secret in url_secrets(self._url):
            line = line.replace(secret, "***")
        return line

    def lease(self, session_id: str) -> RowLease:
        """Take the session's lease: a row with an expiry and a fencing token (``lease.py``)."""
        if self.mode == "read":
            raise SessionFileError(f"{self.location} was opened read-only; it takes no write lease")
        return RowLease(self, session_id)

    def reader(self) -> PostgresStore:
        """Another, read-only store of the same schema (sharing the process's pool)."""
        return PostgresStore(self.where, mode="read")

    def close(self, *, checkpoint: bool = True) -> None:
        """Stop using the store (the pool stays, for the process's other stores); never raises."""
        self.closed = True

    # -- writes ---------------------------------------------------------------------------------

    def write(self, rows: Sequence[Row], *, session: tuple[Any, ...] | None = None) -> None:
        """Insert ``rows`` (and optionally a new session row) atomically, then notify followers.

        A batch of up to ``STATEMENT_ROWS`` rows is one statement (its own transaction: one round
        trip); a bigger one is several statements in one transaction. With the session's lease held
        the first statement checks its token (``writes.py``): a lost lease raises
        :class:`SessionLockedError` and inserts nothing. A write whose connection was lost before
        its answer is looked up on a fresh connection: done if it was stored, else written again;
        if the server cannot be reached it raises, and the next write looks it up first.
        """
        if not rows and session is None:
            return
        sid = rows[0][0] if rows else session[0]  # type: ignore[index]
        span = (rows[0][1], rows[-1][1]) if rows else (-1, -1)
        doubt = self._in_doubt.pop(sid, None)
        if doubt is not None:
            self._settle(sid, doubt)
        try:
            self._write(sid, rows, session)
            return
        except _LostError as lost:
            if lost.stalled:
                self._in_doubt[sid] = span
                raise
            first = lost
        try:
            stored = self._stored(sid, span)
        except NbagentError:
            self._in_doubt[sid] = span
            raise first from None
        if stored:
            NOTIFIER.tell(self, sid)
            return
        try:
            self._write(sid, rows, session)
        except _LostError:
            self._in_doubt[sid] = span
            raise

    def _write(self, sid: str, rows: Sequence[Row], session: tuple[Any, ...] | None) -> None:
        chunks = [rows[i : i + STATEMENT_ROWS] for i in range(0, len(rows), STATEMENT_ROWS)] or [()]
        token = self.tokens.get(sid)
        fence = (lease_seconds(), sid, token) if token is not None else None
        insert = self._writes.insert

        def write(c: psycopg.Connection[Any]) -> bool:
            if len(chunks) == 1:
                if c.execute(*insert(session, chunks[0], fence=fence)).fetchone() is None:
                    return False
            else:
                with c.transaction():
                    if c.execute(*insert(session, chunks[0], fence=fence)).fetchone() is None:
                        raise _FencedError
                    for chunk in chunks[1:]:
                        c.execute(*insert(None, chunk, fence=None))
            return True

        try:
            appended = self.run(write, doing="writing to")
        except _FencedError:
            appended = False
        if appended:
            NOTIFIER.tell(self, sid)  # after the commit, off this path (see writes.py)
            return
        holder = self.run(lambda c: c.execute(self._q(_LEASE_HOLDER), (sid,)).fetchone())
        raise SessionLockedError(
            f"session {sid} in {self.location} is no longer this agent's to write: its lease ran out "
            f"while it went unrenewed (the server was unreachable, or this process was stopped) and "
            f"{'was taken by ' + describe_holder(holder) if holder else 'it was given up'}; nothing "
            "was recorded. Close this agent; resume the session once that writer has closed it"
        )

    def _stored(self, sid: str, span: tuple[int, int]) -> bool:
        """Whether the write of ``span`` (seqs; ``(-1, -1)``: only the session row) is stored."""
        if span[0] < 0:
            text = self._q("SELECT 1 FROM {schema}.sessions WHERE id = %s")
            return self.run(lambda c: c.execute(text, (sid,)).fetchone()) is not None
        text = self._q("SELECT max(seq) FROM {schema}.events WHERE session_id = %s")
        last = self.run(lambda c: _one(c.execute(text, (sid,)))[0])
        return last is not None and last >= span[0]

    def _settle(self, sid: str, span: tuple[int, int]) -> None:
        """Before writing on: the write in doubt must not be stored (this agent wrote its seqs again)."""
        try:
            stored = self._stored(sid, span)
        except NbagentError:
            self._in_doubt[sid] = span
            raise
        if stored:
            self._in_doubt[sid] = span
            raise SessionWriteError(
                f"a write to session {sid} in {self.location} whose answer was lost with the connection "
                f"(seq {span[0]}-{span[1]}) was stored after all, so this agent's copy of the log is behind "
                "it; close the agent and resume the session (resume_session() or %agent resume)"
            )

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

    def delete_session(self, session_id: str) -> None:
        """Delete a session's row, log and lease in one transaction (the caller holds its lease)."""
        q = self._q

        def delete(c: psycopg.Connection[Any]) -> None:
            with c.transaction():
                for table, column in (("events", "session_id"), ("sessions", "id"), ("leases", "session_id")):
                    c.execute(q(f"DELETE FROM {{schema}}.{table} WHERE {column} = %s"), (session_id,))

        self.run(delete, doing="writing to")

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
        args: tuple[str, ...]
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
        count, last = self.run(lambda c: _one(c.execute(sql, (session_id,))))
        if not count:
            return LogFigures(0, -1, 0, None)
        return LogFigures(count, last, self.tail(session_id)[1], None)

    def _fetch_first_gap(self, session_id: str) -> tuple[int, int]:
        gap = self._q(
            "SELECT seq FROM (SELECT seq, row_number() OVER (ORDER BY seq) - 1 AS want "
            "FROM {schema}.events WHERE session_id = %s) x WHERE seq <> want ORDER BY seq LIMIT 1"
        )
        (before,) = self.run(lambda c: _one(c.execute(gap, (session_id,))))
        count = self._q("SELECT count(*) FROM {schema}.events WHERE session_id = %s AND seq < %s")
        return self.run(lambda c: _one(c.execute(count, (session_id, before)))[0]), before

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
        return self.run(lambda c: _one(c.execute(sql, (session_id,)))[0])

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

    def last_seqs(self, session_ids: list[str]) -> dict[str, int | None]:
        """The last seq of each session (one statement, an index probe each): what a rescan reads."""
        text = self._q(
            "SELECT s, (SELECT max(seq) FROM {schema}.events WHERE session_id = s) FROM unnest(%s::text[]) s"
        )
        return dict(self.run(lambda c: c.execute(text, (session_ids,)).fetchall()))

    def _fetch_stored_session(self, session_id: str) -> Fetched | None:
        sql = self._q("SELECT * FROM {schema}.sessions WHERE id = %s")
        return self.run(lambda c: c.execute(sql, (session_id,)).fetchone())


_LEASE_HOLDER = (
    "SELECT token, host, pid, started, since, extract(epoch FROM expires_at - clock_timestamp()) "
    "FROM {schema}.leases WHERE session_id = %s"
)


class _LostError(SessionWriteError):
    """The connection died under a call (the server, the pooler or the network went away)."""

    def __init__(self, message: str, *, stalled: bool) -> None:
        super().__init__(message)
        self.stalled = stalled


class _FencedError(Exception):
    """A multi-statement append found its lease lost (rolls its transaction back)."""
