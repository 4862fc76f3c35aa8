"""The read-only REST API of the lab extension, behind Jupyter's authentication (SPEC §9.6).

- ``GET nbagent/api/sessions?path=DIR`` — the sessions of the session files in ``DIR``
  (or ``?file=FILE`` for one file): a JSON list, most recent activity first.
- ``GET nbagent/api/sessions/<id>/events?file=FILE&after=SEQ&limit=N`` — events with
  ``seq > after`` in seq order, at most ``limit`` (default 1000, at most 10000).
- ``GET nbagent/api/sessions/<id>/timeline?file=FILE&known=SEQ`` — the timeline bundle
  (``application/vnd.nbagent.timeline+json``); 204 when ``known`` is still its ``seq``.
- ``GET nbagent/api/sessions/<id>/transcript?file=FILE&format=md|html`` — the transcript.

Paths are relative to the server root and stay inside it (403 outside, 404 missing); a file that
is not an nbagent session file is refused with 422 and left untouched.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any, TypeVar

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from nbagent.errors import NbagentError, SessionNotFoundError
from nbagent.labserver.export import FORMATS, transcript
from nbagent.labserver.paths import PathRefused, Resolved, resolve
from nbagent.labserver.sessions import TimelineCache, event_json, file_sessions, folder_sessions
from nbagent.store.reading import read_events

T = TypeVar("T")
DEFAULT_LIMIT = 1000
MAX_LIMIT = 10_000
TAB_TEXT = 20_000
"""Characters of one text field the timeline tab receives (longer ones end with ``…``)."""

AUTH_RESOURCE = "contents"


class _Base(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def timelines(self) -> TimelineCache:
        return self.settings["nbagent_timelines"]

    @property
    def allow_hidden(self) -> bool:
        return bool(getattr(self.contents_manager, "allow_hidden", False))

    def _resolve(self, rel: str, kind: str) -> Resolved:
        try:
            return resolve(self.settings["nbagent_root"], rel, kind=kind, allow_hidden=self.allow_hidden)
        except PathRefused as exc:
            raise web.HTTPError(exc.status, exc.message) from None

    def _int(self, name: str, default: int | None) -> int | None:
        raw = self.get_argument(name, None)
        if raw is None or raw == "":
            return default
        try:
            return int(raw)
        except ValueError:
            raise web.HTTPError(400, f"{name} must be an integer, not {raw!r}") from None

    async def _read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking read off the event loop; nbagent errors become clear 4xx answers."""
        try:
            return await asyncio.to_thread(fn, *args, **kwargs)
        except SessionNotFoundError as exc:
            raise web.HTTPError(404, str(exc)) from None
        except NbagentError as exc:
            raise web.HTTPError(422, f"{exc} (not readable as an nbagent session file)") from None

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """``{"message": ...}`` naming the cause, as Jupyter's API handlers answer."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"message": message, "reason": self._reason}))


class SessionsHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        file = self.get_argument("file", None)
        if file is not None:
            target = self._resolve(file, "file")
            rows = await self._read(file_sessions, target.real, target.api)
        else:
            folder = self._resolve(self.get_argument("path", ""), "dir")
            rows = await self._read(
                folder_sessions,
                self.settings["nbagent_root"],
                folder.real,
                folder.api,
                allow_hidden=self.allow_hidden,
            )
        self.finish(json.dumps(rows))


class EventsHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        target = self._resolve(self.get_argument("file"), "file")
        after = self._int("after", -1)
        limit = self._int("limit", DEFAULT_LIMIT)
        if limit is None or not 1 <= limit <= MAX_LIMIT:
            raise web.HTTPError(400, f"limit must be between 1 and {MAX_LIMIT}")
        events = await self._read(read_events, target.real, session_id, after=after, limit=limit)
        self.finish(json.dumps([event_json(ev) for ev in events]))


class TimelineHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        target = self._resolve(self.get_argument("file"), "file")
        known = self._int("known", None)
        bundle = await self._read(
            self.timelines.bundle, target.real, session_id, known=known, max_text=TAB_TEXT
        )
        if bundle is None:
            self.set_status(204)
            self.finish()
            return
        self.finish(json.dumps(bundle), set_content_type="application/vnd.nbagent.timeline+json")


class TranscriptHandler(_Base):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        target = self._resolve(self.get_argument("file"), "file")
        fmt = self.get_argument("format", "md")
        if fmt not in FORMATS:
            raise web.HTTPError(400, f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
        text = await self._read(transcript, target.real, session_id, fmt=fmt)
        stem = target.real.name.removesuffix(".sqlite").removesuffix(".nbagent") or "session"
        name = f"{stem}-{session_id[:8]}.{fmt}"
        mime = "text/markdown" if fmt == "md" else "text/html"
        self.set_header("Content-Disposition", f'attachment; filename="{name}"')
        self.set_header("X-Content-Type-Options", "nosniff")
        self.finish(text, set_content_type=f"{mime}; charset=utf-8")


SESSION_ID = r"(?P<session_id>[^/]+)"


def routes(base_url: str) -> list[tuple[str, type[APIHandler]]]:
    from jupyter_server.utils import url_path_join

    api = url_path_join(base_url, "nbagent", "api", "sessions")
    return [
        (api, SessionsHandler),
        (url_path_join(api, SESSION_ID, "events"), EventsHandler),
        (url_path_join(api, SESSION_ID, "timeline"), TimelineHandler),
        (url_path_join(api, SESSION_ID, "transcript"), TranscriptHandler),
    ]
