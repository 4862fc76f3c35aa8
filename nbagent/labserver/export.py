"""A session's transcript as Markdown or a standalone HTML page (``nbagent transcript``, the panel's
export): one fold of the log (:mod:`nbagent.views`), read strictly read-only. Everything from the
file (title, prompts, answers, names) is escaped as data in both formats (:mod:`nbagent.views.escape`)."""

from __future__ import annotations

import os

from nbagent.errors import SessionNotFoundError
from nbagent.labserver.sessions import first_prompt
from nbagent.store.base import SessionRow
from nbagent.store.location import PostgresLocation, StoreLocation, Where, parse_location
from nbagent.store.reading import list_sessions, read_events
from nbagent.views.escape import escape_html, escape_markdown

FORMATS = ("md", "html")


def pick_session(path: StoreLocation, session_id: str | None) -> SessionRow:
    """The session ``session_id`` of the file (or ``postgresql://`` URL), or its most recently active one."""
    if not isinstance(path, PostgresLocation) and not os.path.lexists(path.path):
        raise SessionNotFoundError(
            f"no session file at {path.path}; give the path of a <notebook>.nbagent.sqlite"
        )
    rows = list_sessions(path)
    if not rows:
        raise SessionNotFoundError(f"{source_name(path)} holds no session yet")
    if session_id is None:
        return rows[0]
    for row in rows:
        if row.id == session_id or (len(session_id) >= 4 and row.id.startswith(session_id)):
            return row
    known = ", ".join(r.id[:8] for r in rows[:5])
    if len(session_id) < 4 and any(r.id.startswith(session_id) for r in rows):
        raise SessionNotFoundError(
            f"session id {session_id!r} is too short: a prefix needs at least 4 characters "
            f"({source_name(path)} holds {known})"
        )
    raise SessionNotFoundError(f"no session {session_id} in {source_name(path)}; it holds {known}")


def source_name(path: StoreLocation) -> str:
    """How a transcript names where it came from: the file's name, or the URL without its password."""
    return path.shown if isinstance(path, PostgresLocation) else path.path.name


def _title(row: SessionRow, prompt: str) -> str:
    return row.title or prompt or f"session {row.id[:8]}"


def transcript(
    where: Where, session_id: str | None = None, *, fmt: str = "md", shown: str | None = None
) -> str:
    """The transcript of one session: Markdown (``md``) or a standalone HTML page (``html``).

    Typed prompts and injected context are marked apart by their source, as in ``%agent
    transcript``. Raises :class:`~nbagent.errors.SessionFileError` for a file nbagent cannot read
    and :class:`~nbagent.errors.SessionNotFoundError` for an unknown session. ``shown`` names
    where it came from in place of the file's name or the redacted URL (the lab server's name of a
    database).
    """
    from nbagent.views import stylesheet, timeline_html, timeline_json, transcript_markdown

    if fmt not in FORMATS:
        raise ValueError(f"unknown transcript format {fmt!r}; use one of {', '.join(FORMATS)}")
    path = parse_location(where)
    source = source_name(path) if shown is None else shown
    row = pick_session(path, session_id)
    events = read_events(path, row.id)
    title = _title(row, first_prompt(events[:64]))
    bundle = timeline_json(events, max_text=None)
    if fmt == "md":
        facts = " · ".join(p for p in (source, f"session {row.id}", row.model and f"model {row.model}") if p)
        heading = escape_markdown(" ".join(title.split()))
        return f"# {heading}\n\n*{escape_markdown(facts)}*\n\n" + transcript_markdown(bundle)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape_html(title)}</title><style>{stylesheet()}\n"
        "body{margin:2em auto;max-width:60em;padding:0 1em}</style></head>"
        f'<body><h1 class="nbagent-title">{escape_html(title)}</h1>'
        f"<p>{escape_html(source)} · session {escape_html(row.id)}</p>"
        f"{timeline_html(bundle)}</body></html>\n"
    )
