"""What the lab extension shows, read strictly read-only from session files (SPEC §6.1, §9.6).

Everything goes through :func:`nbagent.list_sessions` and :func:`nbagent.read_events`, which never
write, lock, or create ``-wal``/``-shm`` files. Nothing here knows HTTP: the handlers turn the
results into JSON and :class:`~nbagent.errors.NbagentError` into status codes.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nbagent.labserver.paths import is_session_file_name
from nbagent.log.events import (
    INBOX_SPLICED,
    USER_MESSAGE,
    Event,
    EventParseError,
    Splice,
    UserMessageEvent,
    parse_event,
)
from nbagent.log.messages import Message
from nbagent.store.base import SessionRow
from nbagent.store.budget import ReadLimitError, size_text
from nbagent.store.budget import current as current_budget
from nbagent.store.location import PostgresLocation
from nbagent.store.reading import read_events

Readable = Path | PostgresLocation
"""What the API reads: a session file, or a database the server serves (``labserver.databases``)."""
PROMPT_SCAN = 64
"""How many leading events are searched for a session's first typed prompt."""


def session_files(folder: Path) -> list[Path]:
    """The session files directly in ``folder`` (``*.nbagent.sqlite``, ``nbagent.sqlite``), by name."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    return sorted(
        Path(e.path) for e in entries if is_session_file_name(e.name) and e.is_file(follow_symlinks=True)
    )


def _prompt_line(message: Message, limit: int = 200) -> str:
    text = message.plain_text
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def first_prompt(events: Iterable[Event]) -> str:
    """The first line of the first typed prompt (source kind ``user``) queued or sent, or ``""``."""
    for ev in events:
        if ev.type != INBOX_SPLICED and ev.type != USER_MESSAGE:
            continue  # (only these two are parsed: the scan stays cheap)
        try:
            record = parse_event(ev)
        except EventParseError:
            continue
        match record:
            case Splice(inserted=messages):
                pass
            case UserMessageEvent(message=message):
                messages = (message,)
            case _:
                continue
        for message in messages:
            if message.kind == "user":
                return _prompt_line(message)
    return ""


def session_entry(
    row: SessionRow, api_file: str, prompt: str, lineage: tuple[str | None, str | None] = (None, None)
) -> dict[str, Any]:
    """One session as the REST list shows it; ``lineage`` is a fork's ``(purpose, replay_text)``:
    an unnamed fork is labelled by its last replay (SPEC §11.2)."""
    purpose, replayed = lineage
    return {
        "file": api_file,
        "id": row.id,
        "title": row.title,
        "first_prompt": prompt,
        "label": row.title or replayed or prompt or "(no prompt yet)",
        "purpose": purpose,
        "replay_text": replayed,
        "turns": row.turns,
        "events": row.events,
        "last_time": row.last_time,
        "created_at": row.created_at,
        "model": row.model,
        "notebook": row.notebook,
        "parent": row.parent,
    }


def no_session_reason(path: Readable, api_file: str) -> str:
    """Why a session file lists no session: empty (0 bytes), or no session written yet."""
    if isinstance(path, Path) and path.stat().st_size == 0:
        return f"{api_file} is empty (0 bytes): no session has been written to it yet"
    return f"{api_file} holds no session yet"


def identity(path: Readable) -> tuple[Any, ...]:
    """What a cached fold is keyed on: a file's identity (device, inode: a file replaced under the
    same name is another), or a database's address."""
    if isinstance(path, PostgresLocation):
        return ("postgresql", path.url)
    st = path.stat()
    return (st.st_dev, st.st_ino)


def source_stem(path: Readable, api: str) -> str:
    """How a download names where a session came from: the file's stem, or the database's name."""
    if isinstance(path, PostgresLocation):
        return api
    return path.name.removesuffix(".sqlite").removesuffix(".nbagent") or "session"


def event_json(ev: Event) -> dict[str, Any]:
    return {"seq": ev.seq, "time": ev.time, "type": ev.type, "data": ev.data}


class TimelineCache:
    """Folded timelines of recently viewed sessions, so a follower's poll folds only new events.

    Keyed on the file's identity (device, inode) and the session id: a file replaced under the same
    name starts a fresh fold.
    """

    def __init__(self, size: int = 16, max_bytes: int = 256 << 20) -> None:
        self.size = size
        self.max_bytes = max_bytes
        """Bytes of records one session's fold may hold (a longer log is refused, not folded)."""
        self._entries: OrderedDict[tuple[Any, ...], tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[tuple[Any, ...], threading.Lock] = {}

    def bundle(
        self,
        path: Readable,
        session_id: str,
        *,
        known: int | None,
        max_text: int | None,
        turn: int | None = None,
        max_turns: int | None = None,
    ) -> dict | None:
        """The session's timeline bundle (one ``turn``'s, or the last ``max_turns`` turns'), or
        ``None`` when ``known`` (a bundle's ``seq``) is still current. Reads only the events after
        those already folded: under a request's budget with pages, a long log is folded over
        several requests (the bundle's ``seq`` tells how far)."""
        from nbagent.views import Timeline

        key = (*identity(path), session_id)
        with self._lock:
            lock = self._key_locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                timeline, size = self._entries.pop(key, (None, 0))
            if timeline is None:
                timeline = Timeline()
            budget = current_budget()
            spent = budget.bytes if budget is not None else 0
            page = read_events(path, session_id, after=timeline.seq - 1)
            if page and page[0].seq != timeline.seq:  # the log is not the one folded: start again
                timeline, size = Timeline(), 0
                page = read_events(path, session_id)
            size += (budget.bytes - spent) if budget is not None else 0
            if size > self.max_bytes:
                raise ReadLimitError(
                    f"the timeline of session {session_id} in {path} would hold more than the "
                    f"{size_text(self.max_bytes)} of records the server folds for one session; read it "
                    "in pages (events?after=SEQ) or export it outside the server (nbagent transcript PATH)"
                )
            timeline.feed(page)
            with self._lock:
                self._entries[key] = (timeline, size)
                while len(self._entries) > self.size or (
                    len(self._entries) > 1 and sum(b for _, b in self._entries.values()) > self.max_bytes
                ):
                    old, _ = self._entries.popitem(last=False)
                    self._key_locks.pop(old, None)
            if known is not None and known == timeline.seq:
                return None
            return timeline.to_json(max_text=max_text, turn=turn, max_turns=max_turns)
