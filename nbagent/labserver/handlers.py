"""The read-only REST API of the lab extension, behind Jupyter's authentication (SPEC §9.6).

- ``GET nbagent/api/sessions?path=DIR&offset=N&limit=M`` — the sessions of the session files in
  ``DIR`` (or ``?file=FILE`` for one file): a JSON list, most recent activity first, one page of
  at most ``limit`` (default 200, at most 1000); a ``Link: <…>; rel="next"`` header names the next
  page (:mod:`nbagent.labserver.listing`).
- ``GET nbagent/api/sessions/<id>/events?file=FILE&after=SEQ&limit=N`` — events with
  ``seq > after`` in seq order, at most ``limit`` (default 1000, at most 10000) and at most
  ``PAGE_BYTES`` of records (a shorter page is not the end: page on until an empty one).
- ``GET nbagent/api/sessions/<id>/timeline?file=FILE&known=SEQ&turn=N&turns=K`` — the timeline
  bundle (``application/vnd.nbagent.timeline+json``), of one turn or of the last ``K`` turns;
  204 when ``known`` is still its ``seq``. A long log is folded over several requests: the
  bundle's ``seq`` says how far; poll with ``known`` to get the rest.
- ``GET nbagent/api/sessions/<id>/timeline?file=FILE&window=K&known=SEQ`` — the session tab's
  bundle: the newest ``K`` turns (and every later one), folded without reading the whole log
  (:mod:`nbagent.labserver.window`); with ``before=T``, the ``K`` turns before turn ``T``; with
  ``turn=N``, the ``K`` turns around turn ``N``; with ``after=T``, the ``K`` turns after turn ``T``
  (:mod:`nbagent.labserver.jump`: going to a turn, and paging forwards from it to the newest).
- ``GET nbagent/api/sessions/<id>/timeline?file=FILE&find=TEXT&after=T&limit=L`` — the turns after
  turn ``T`` whose title holds ``TEXT``: ``{"matches": [{"turn", "title"}], "next", "turns"}``, at
  most ``L`` (default 20, at most 100), the search bounded in rows, bytes and time (``next``: go on
  with ``after=next``).
- ``GET nbagent/api/sessions/<id>/timeline?file=FILE&turn=N&output=cell&headline=H`` — turn ``N``
  as a live cell's output shows it: its MIME bundle (:mod:`nbagent.labserver.cell_output`).
- ``GET nbagent/api/sessions/<id>/transcript?file=FILE&format=md|html`` — the transcript.
- ``GET nbagent/api/databases`` — the names of the PostgreSQL stores the server serves
  (:mod:`nbagent.labserver.databases`); every request above takes ``db=NAME`` in place of
  ``file=FILE`` (``path=DIR`` for a listing) to read one of them, and a follower of one waits for
  its next change with ``timeline?db=NAME&window=K&known=SEQ&wait=S`` (at most ``MAX_WAIT_S``;
  204 when nothing moved meanwhile).

Paths are API paths of the contents manager (relative to its root, under its hidden-file rules;
403 outside, 404 missing or hidden); a file that is not an nbagent session file is refused with
422 and left untouched; errors name paths relative to that root. Every request's reads run in
the extension's own threads under a :class:`~nbagent.store.budget.Budget`, so a crafted file
cannot stall the server or answer with hundreds of megabytes.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, overload
from urllib.parse import quote, urlencode

import orjson
from jupyter_core.paths import is_hidden
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import ensure_async
from tornado import web

from nbagent.errors import NbagentError, SessionNotFoundError
from nbagent.labserver.cell_output import cell_output
from nbagent.labserver.databases import ANSWER_S, DATABASE_READS, MAX_WAIT_S, SETTING, Database, long_poll
from nbagent.labserver.diffs import diff_answer
from nbagent.labserver.export import FORMATS, transcript
from nbagent.labserver.jump import MAX_FIND, MAX_MATCHES, SCAN_BYTES, around, find_turns, later
from nbagent.labserver.listing import MAX_PAGE_SESSIONS, PAGE_SESSIONS, listing_page
from nbagent.labserver.paths import PathRefused, Resolved, resolve
from nbagent.labserver.plans import plan_answer
from nbagent.labserver.sessions import Readable, TimelineCache, event_json, session_files, source_stem
from nbagent.labserver.window import earlier
from nbagent.log.record import EventParseError
from nbagent.store.budget import Budget, ReadLimitError, bounded, size_text
from nbagent.store.reading import read_events

KERNEL_ADVICE = " — pass another path (or set NBAGENT_DB)"
"""The way out a store error offers code that opens a session; the panel's reader cannot take it."""
T = TypeVar("T")
DEFAULT_LIMIT = 1000
MAX_LIMIT = 10_000
MAX_SEQ = (1 << 63) - 1
TAB_TEXT = 20_000
"""Characters of one text field the timeline tab receives (longer ones end with ``…``)."""
PAGE_BYTES = 8 << 20
"""Bytes of records one events page holds at most (at least one event)."""
FOLD_EVENTS = 20_000
"""Events one timeline request folds at most; the next request folds on."""
MAX_RESPONSE = 32 << 20
"""Bytes of one answer at most: a bigger timeline is windowed to its last turns, else refused."""
WINDOWS = (None, 50, 10, 1)
"""The timeline windows tried, widest first, until the bundle fits in ``MAX_RESPONSE``."""
MAX_WINDOW = 1000
"""Turns one ``window=`` request may ask for."""
DEFAULT_MATCHES = 20
"""Matches a ``find=`` answer holds unless ``limit`` says otherwise."""

MAX_FILES = 500
"""Session files one folder listing reads at most (each under a budget of its own)."""

AUTH_RESOURCE = "contents"


READS = "nbagent_executor"
LISTINGS = "nbagent_list_executor"
"""The settings holding the two thread pools: other reads, and session listings."""


def make_executor(name: str = "nbagent-api") -> ThreadPoolExecutor:
    """The extension's own reader threads: a slow read never takes the threads Jupyter uses."""
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix=name)


class _Base(APIHandler):
    auth_resource = AUTH_RESOURCE
    database: Database | None = None
    """The database this request reads (``db=NAME``), if it reads one: its reads run in the
    databases' threads, within ``ANSWER_S``, and its errors name it by its name."""

    @property
    def timelines(self) -> TimelineCache:
        return self.settings["nbagent_timelines"]

    @property
    def allow_hidden(self) -> bool:
        return bool(getattr(self.contents_manager, "allow_hidden", False))

    @property
    def root(self) -> str:
        """The contents manager's root: what ``/api/contents`` serves is what this API serves."""
        root = getattr(self.contents_manager, "root_dir", None)
        if not root:
            raise web.HTTPError(404, "this server's contents are not files on disk; nbagent cannot read them")
        return str(root)

    async def _resolve(self, rel: str, kind: str) -> Resolved:
        """An API path inside the contents root, visible and existing by the contents manager's rules."""
        cm = self.contents_manager
        try:
            target = resolve(self.root, rel, kind=kind, allow_hidden=self.allow_hidden)
        except PathRefused as exc:
            raise web.HTTPError(exc.status, exc.message) from None
        if not self.allow_hidden and await ensure_async(cm.is_hidden(target.api)):
            raise web.HTTPError(404, f"{rel!r} is hidden (the server does not show hidden files)")
        exists = cm.dir_exists if kind == "dir" else cm.file_exists
        if not await ensure_async(exists(target.api)):
            raise web.HTTPError(
                404, f"no {'folder' if kind == 'dir' else 'file'} {rel!r} under the server root"
            )
        return target

    def _database(self, name: str) -> Database:
        try:
            self.database = self.settings[SETTING].resolve(name)
        except PathRefused as exc:
            raise web.HTTPError(exc.status, exc.message) from None
        return self.database

    async def _source(self) -> Resolved | Database:
        """Where the request's session is: ``db=NAME`` (a database the server serves) or
        ``file=FILE`` (a session file under the contents root)."""
        name = self.get_argument("db", None)
        if name is not None:
            return self._database(name)
        return await self._resolve(self.get_argument("file"), "file")

    @overload
    def _int(self, name: str, default: int, low: int, high: int) -> int: ...

    @overload
    def _int(self, name: str, default: None, low: int, high: int) -> int | None: ...

    def _int(self, name: str, default: int | None, low: int, high: int) -> int | None:
        raw = self.get_argument(name, None)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            raise web.HTTPError(400, f"{name} must be an integer, not {raw[:40]!r}") from None
        if not low <= value <= high:
            raise web.HTTPError(422, f"{name} must be between {low} and {high}, not {raw[:40]}")
        return value

    def _turn(self, name: str) -> int | None:
        """An optional turn number (1 to :data:`MAX_SEQ`) from the query."""
        return self._int(name, None, 1, MAX_SEQ)

    def _relative(self, text: str) -> str:
        """``text`` with the server's absolute paths shown relative to the contents root, without
        the advice meant for code that opens sessions (a browser user passes no path, sets no
        ``NBAGENT_DB``)."""
        for root in {os.path.realpath(self.root), os.path.abspath(self.root)} - {os.sep}:
            text = text.replace(root + os.sep, "").replace(root, ".")
        text = text.removesuffix(KERNEL_ADVICE)
        return text if self.database is None else self.database.words(text)

    async def _run(self, fn: Callable[..., T], *args: Any, pool: str = READS, **kwargs: Any) -> T:
        """Run a blocking read in the extension's threads (``pool``: the listings' or the other
        reads'; a database's in threads of their own, answered within ``ANSWER_S``); nbagent
        errors become clear 4xx answers (a database that cannot be used: 503, or 504 in time)."""
        loop = asyncio.get_running_loop()
        db = self.database
        pool = DATABASE_READS if db is not None else pool
        executor = self.settings.get(pool) or self.settings[READS]
        try:
            future = loop.run_in_executor(executor, lambda: fn(*args, **kwargs))
            return await (future if db is None else asyncio.wait_for(future, ANSWER_S))
        except asyncio.TimeoutError:
            assert db is not None
            raise web.HTTPError(
                504, f"database {db.name!r} did not answer within {ANSWER_S:g} s; try again once it is back"
            ) from None
        except SessionNotFoundError as exc:
            raise web.HTTPError(404, self._relative(str(exc))) from None
        except (ReadLimitError, EventParseError) as exc:
            raise web.HTTPError(422, self._relative(str(exc))) from None
        except NbagentError as exc:
            if db is not None:
                raise web.HTTPError(503, self._relative(str(exc))) from None
            message = f"{exc} (not readable as an nbagent session file)"
            raise web.HTTPError(422, self._relative(message)) from None

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """``{"message": ...}`` naming the cause, as Jupyter's API handlers answer."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": message, "reason": self._reason}))


def _json_bytes(value: Any) -> bytes:
    return orjson.dumps(value)


class SessionsHandler(_Base):
    """``?path=DIR`` or ``?file=FILE``, with ``offset``/``limit`` paging (``PAGE_SESSIONS`` by
    default): a JSON list, most recent first; a ``Link: <…>; rel="next"`` header names the next page
    while there is one. Listings run in threads of their own, so a slow one never holds up the
    timeline, events or transcript requests."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        offset = self._int("offset", 0, 0, MAX_SEQ)
        limit = self._int("limit", PAGE_SESSIONS, 1, MAX_PAGE_SESSIONS)
        assert offset is not None and limit is not None
        file = self.get_argument("file", None)
        db = self.get_argument("db", None)
        targets: list[tuple[Any, str]]
        if db is not None:
            database = self._database(db)
            targets = [(database.real, database.api)]
        elif file is not None:
            target = await self._resolve(file, "file")
            targets = [(target.real, target.api)]
        else:
            folder = await self._resolve(self.get_argument("path", ""), "dir")
            found = await self._run(session_files, folder.real, pool=LISTINGS)
            if len(found) > MAX_FILES:
                raise web.HTTPError(
                    422,
                    f"{folder.api or '.'} holds {len(found)} session files, more than the {MAX_FILES} one "
                    "listing reads; list them one by one (file=FILE) or move some into sub-folders",
                )
            targets = await self._run(self._visible, folder.api, found, pool=LISTINGS)
        labels = self.settings.get("nbagent_labels")
        page = await self._run(
            listing_page, targets, Budget, offset=offset, limit=limit, labels=labels, pool=LISTINGS
        )
        if db is not None and page.entries and set(page.entries[0]) == {"file", "error"}:
            raise web.HTTPError(503, self._relative(page.entries[0]["error"]))
        if file is not None and page.entries and set(page.entries[0]) == {"file", "error"}:
            raise web.HTTPError(
                422, self._relative(f"{page.entries[0]['error']} (not readable as an nbagent session file)")
            )
        for row in page.entries:
            if "error" in row:
                row["error"] = self._relative(row["error"])
            if db is not None:
                row["db"] = db
        if page.more:
            self.set_header("Link", f'<{self._page_url(offset + limit, limit)}>; rel="next"')
        self.set_header("X-Nbagent-Total", str(page.total))
        self.finish(await self._run(_json_bytes, page.entries, pool=LISTINGS))

    def _visible(self, folder_api: str, found: list[Path]) -> list[tuple[Path, str]]:
        """The folder's session files the contents manager shows: inside the root (a link leading
        out is not listed) and, unless the server shows hidden files, not hidden."""
        root, targets = self.root, []
        for path in found:
            api_file = f"{folder_api}/{path.name}" if folder_api else path.name
            try:
                target = resolve(root, api_file, kind="file", allow_hidden=self.allow_hidden)
            except PathRefused:
                continue
            if self.allow_hidden or not is_hidden(str(target.real), os.path.realpath(root)):
                targets.append((target.real, target.api))
        return targets

    def _page_url(self, offset: int, limit: int) -> str:
        keys = ("path", "file", "db")
        query = {k: self.get_argument(k) for k in keys if self.get_argument(k, None) is not None}
        return f"{self.request.path}?{urlencode({**query, 'offset': offset, 'limit': limit})}"


class EventsHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        target = await self._source()
        after = self._int("after", -1, -1, MAX_SEQ - 1)
        limit = self._int("limit", DEFAULT_LIMIT, 1, MAX_LIMIT)

        def page() -> bytes:
            with bounded(Budget(page_bytes=PAGE_BYTES)):
                events = read_events(target.real, session_id, after=after, limit=limit)
            return orjson.dumps([event_json(ev) for ev in events])

        self.finish(await self._run(page), set_content_type="application/json")


class TimelineHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        target = await self._source()
        known = self._int("known", None, 0, MAX_SEQ)
        turn = self._turn("turn")
        turns = self._int("turns", None, 1, MAX_SEQ)
        window = self._int("window", None, 1, MAX_WINDOW)
        wait = self._int("wait", None, 0, MAX_WAIT_S)
        find = self.get_argument("find", None)
        newest: Callable[[], Awaitable[bytes | None]] | None = None
        if find is not None:
            after: int | None = self._int("after", 0, 0, MAX_SEQ) or 0
            limit = self._int("limit", DEFAULT_MATCHES, 1, MAX_MATCHES) or DEFAULT_MATCHES
            if not find.strip() or len(find) > MAX_FIND:
                raise web.HTTPError(
                    422, f"find must be 1 to {MAX_FIND} characters of a turn's title, not {len(find)}"
                )
            body: bytes | None = await self._run(
                self._find, target.real, session_id, find.strip(), after, limit
            )
        elif window is not None:
            before = self._int("before", None, 1, MAX_SEQ)
            after = self._int("after", None, 0, MAX_SEQ)
            if sum(x is not None for x in (before, after, turn)) > 1:
                raise web.HTTPError(422, "a window is around one place: give one of turn, before and after")
            if turn is not None or after is not None:
                body = await self._run(self._jump, target.real, session_id, window, turn, after)
            elif before is not None:
                body = await self._run(self._window, target.real, session_id, known, window, before)
            else:
                newest = partial(self._run, self._window, target.real, session_id, known, window, None)
                body = await newest()
        else:
            cell = self.get_argument("output", None)
            if cell not in (None, "cell") or (cell and turn is None):
                raise web.HTTPError(422, "output=cell needs turn=N, and cell is its only value")
            headline = self.get_argument("headline", None) if cell else None
            bundle = (self._bundle, target.real, session_id, known, turn, turns, headline, bool(cell))
            newest = partial(self._run, *bundle) if turn is None else None
            body = await self._run(*bundle)
        if wait:
            body = await self._waited(target, session_id, known, wait, newest, body)
        if body is None:
            self.set_status(204)
            self.finish()
            return
        self.finish(body, set_content_type="application/vnd.nbagent.timeline+json")

    async def _waited(
        self,
        target: Resolved | Database,
        session_id: str,
        known: int | None,
        wait: int,
        newest: Callable[[], Awaitable[bytes | None]] | None,
        body: bytes | None,
    ) -> bytes | None:
        """``body``, or when it is ``None`` (nothing moved past ``known``) the next answer once the
        session moves, waiting at most ``wait`` seconds through the process's listener."""
        if not isinstance(target, Database) or known is None or newest is None:
            raise web.HTTPError(
                422,
                "wait=S is for following a database's session: give db=NAME and known=SEQ, with the "
                "newest window (window=K) or the whole timeline (no turn, before, after or find)",
            )
        if body is not None:
            return body
        store = await self._run(self.settings[SETTING].follow_store, target)
        return await long_poll(store, session_id, known=known, seconds=wait, answer=newest)

    def _bundle(
        self,
        path: Readable,
        session_id: str,
        known: int | None,
        turn: int | None,
        turns: int | None,
        headline: str | None = None,
        cell: bool = False,
    ) -> bytes | None:
        windows = (turns,) if turns is not None or turn is not None else WINDOWS
        for window in windows:
            with bounded(Budget(page_events=FOLD_EVENTS, page_bytes=PAGE_BYTES * 4)):
                bundle = self.timelines.bundle(
                    path, session_id, known=known, max_text=TAB_TEXT, turn=turn, max_turns=window
                )
            if bundle is None:
                return None
            body = orjson.dumps(cell_output(bundle, headline) if cell else bundle)
            if len(body) <= MAX_RESPONSE:
                return body
        raise ReadLimitError(
            f"the timeline of session {session_id} in {path} is larger than the {size_text(MAX_RESPONSE)} "
            "one answer may hold; ask for one turn (turn=N), or export its transcript outside the "
            "server (nbagent transcript PATH)"
        )

    def _find(self, path: Readable, session_id: str, text: str, after: int, limit: int) -> bytes:
        budget = Budget(page_bytes=PAGE_BYTES, max_bytes=SCAN_BYTES * 2)
        return orjson.dumps(find_turns(path, session_id, text=text, after=after, limit=limit, budget=budget))

    def _jump(
        self, path: Readable, session_id: str, turns: int, turn: int | None, after: int | None
    ) -> bytes:
        """The window around ``turn``, or the page after ``after``: too long for one answer (or
        one fold), it holds fewer turns (still around ``turn``, still right after ``after``)."""
        while True:
            page = Budget(page_events=FOLD_EVENTS, page_bytes=PAGE_BYTES * 4)
            if turn is not None:
                bundle = around(path, session_id, turn=turn, turns=turns, max_text=TAB_TEXT, page=page)
            else:
                bundle = later(path, session_id, after=after or 0, turns=turns, max_text=TAB_TEXT, page=page)
            body = orjson.dumps(bundle)
            if bundle["complete"] and len(body) <= MAX_RESPONSE:
                return body
            if turns == 1:
                raise ReadLimitError(
                    f"a turn of session {session_id} in {path} is larger than the {size_text(MAX_RESPONSE)} "
                    "one answer may hold; export its transcript outside the server (nbagent transcript PATH)"
                )
            turns = max(1, turns // 4)

    def _window(
        self, path: Readable, session_id: str, known: int | None, turns: int, before: int | None
    ) -> bytes | None:
        page = Budget(page_events=FOLD_EVENTS, page_bytes=PAGE_BYTES * 4)
        if before is None:
            bundle = self.settings["nbagent_windows"].newest(
                path, session_id, turns=turns, known=known, max_text=TAB_TEXT, page=page
            )
            body = None if bundle is None else orjson.dumps(bundle)
        else:
            # An earlier page too long for one answer (or one fold) holds fewer turns: the tab
            # asks for the next page before the first turn it got.
            while True:
                bundle = earlier(path, session_id, before=before, turns=turns, max_text=TAB_TEXT, page=page)
                body = orjson.dumps(bundle)
                if turns == 1 or (bundle["complete"] and len(body) <= MAX_RESPONSE):
                    break
                turns, page = max(1, turns // 4), Budget(page_events=FOLD_EVENTS, page_bytes=PAGE_BYTES * 4)
        if body is not None and len(body) > MAX_RESPONSE:
            raise ReadLimitError(
                f"{turns} turns of session {session_id} in {path} are larger than the "
                f"{size_text(MAX_RESPONSE)} one answer may hold; ask for fewer (window=N)"
            )
        return body


class TranscriptHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        target = await self._source()
        fmt = self.get_argument("format", "md")
        if fmt not in FORMATS:
            raise web.HTTPError(400, f"format must be one of {', '.join(FORMATS)}, not {fmt[:20]!r}")
        shown = target.name if isinstance(target, Database) else None
        text = await self._run(_bounded_transcript, target.real, session_id, fmt, shown)
        name = f"{source_stem(target.real, target.api)}-{session_id[:8]}.{fmt}"
        mime = "text/markdown" if fmt == "md" else "text/html"
        self.set_header("Content-Disposition", content_disposition(name))
        self.set_header("X-Content-Type-Options", "nosniff")
        self.finish(text, set_content_type=f"{mime}; charset=utf-8")


def content_disposition(name: str) -> str:
    """``attachment`` with ``name`` as RFC 6266 gives it: ``filename*`` carries the name in UTF-8,
    percent-encoded (``分析``, a ``"`` or a ``;`` inject nothing), and ``filename`` an ASCII fallback
    for old clients with every other character as ``_``."""
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\%;' else "_" for c in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


TRANSCRIPT_EVENTS = 100_000
"""Events one transcript request may read; a longer session is exported outside the server."""


def _bounded_transcript(path: Readable, session_id: str, fmt: str, shown: str | None = None) -> bytes:
    with bounded(Budget(max_events=TRANSCRIPT_EVENTS, max_bytes=MAX_RESPONSE * 2)):
        text = transcript(path, session_id, fmt=fmt, shown=shown).encode()
    if len(text) > MAX_RESPONSE:
        raise ReadLimitError(
            f"the transcript of session {session_id} in {path} is larger than the "
            f"{size_text(MAX_RESPONSE)} one answer may hold; export it outside the server "
            "(nbagent transcript PATH)"
        )
    return text


class DiffHandler(_Base):
    """``GET …/<id>/diff?file=FILE[&turn=N][&against=ID][&against_turn=M]``: a fork's turn beside its
    parent's (``nbagent.labserver.diffs``), both logs read under one budget."""

    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        target = await self._source()
        turn = self._turn("turn")
        against_turn = self._turn("against_turn")
        against = self.get_argument("against", None) or None
        body = await self._run(_bounded_diff, target.real, session_id, turn, against, against_turn)
        self.finish(body, set_content_type="application/json")


DIFF_EVENTS = 2 * FOLD_EVENTS
"""Events one diff request reads at most (both sessions); a longer pair is compared in the kernel."""


def _bounded_diff(
    path: Readable, session_id: str, turn: int | None, against: str | None, against_turn: int | None
) -> bytes:
    with bounded(Budget(max_events=DIFF_EVENTS, max_bytes=MAX_RESPONSE * 2)):
        body = orjson.dumps(diff_answer(path, session_id, turn, against, against_turn))
    if len(body) > MAX_RESPONSE:
        raise ReadLimitError(
            f"the diff of session {session_id} in {path} is larger than the {size_text(MAX_RESPONSE)} one "
            "answer may hold; compare the turns in the kernel (%agent diff)"
        )
    return body


class PlanHandler(_Base):
    """``GET …/<id>/plan?file=FILE[&turn=N]``: a finished turn's arrivals for the "What if…" editor
    (``nbagent.labserver.plans``), read under one fold's budget."""

    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        target = await self._source()
        turn = self._turn("turn")
        body = await self._run(_bounded_plan, target.real, session_id, turn)
        self.finish(body, set_content_type="application/json")


def _bounded_plan(path: Readable, session_id: str, turn: int | None) -> bytes:
    with bounded(Budget(max_events=FOLD_EVENTS, max_bytes=MAX_RESPONSE * 2)):
        return orjson.dumps(plan_answer(path, session_id, turn))


class DatabasesHandler(_Base):
    """``GET nbagent/api/databases``: ``[{"name": NAME}]``, the databases this server serves (by
    name only: their addresses stay on the server)."""

    @web.authenticated
    @authorized
    async def get(self) -> None:
        names = self.settings[SETTING].names()
        self.finish(orjson.dumps([{"name": n} for n in names]), set_content_type="application/json")


SESSION_ID = r"(?P<session_id>[^/]+)"


def routes(base_url: str) -> list[tuple[str, type[APIHandler]]]:
    from jupyter_server.utils import url_path_join

    api = url_path_join(base_url, "nbagent", "api", "sessions")
    return [
        (api, SessionsHandler),
        (url_path_join(api, SESSION_ID, "events"), EventsHandler),
        (url_path_join(api, SESSION_ID, "timeline"), TimelineHandler),
        (url_path_join(api, SESSION_ID, "transcript"), TranscriptHandler),
        (url_path_join(api, SESSION_ID, "diff"), DiffHandler),
        (url_path_join(api, SESSION_ID, "plan"), PlanHandler),
        (url_path_join(base_url, "nbagent", "api", "databases"), DatabasesHandler),
    ]
