"""The session listing of the lab panel, one bounded page at a time (SPEC §9.6).

A folder's sessions are sorted most recent first from their metadata rows alone (no event is read
for them); only the sessions of the page asked for get the rest of their entry (a session without
a title is labelled by its first prompt, which reads up to ``PROMPT_SCAN`` events, once:
:mod:`nbagent.labserver.labels` reads a page's labels per file and remembers them). Each file is
read under a budget of its own, the whole listing within ``LISTING_SECONDS``, and every text field
is cut to ``FIELD_CHARS``: a folder of 100,000 sessions or titles of 30 MB cost a bounded answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nbagent.errors import NbagentError
from nbagent.labserver.labels import NO_LINEAGE, Labels, Lineage
from nbagent.labserver.sessions import Readable, no_session_reason, session_entry
from nbagent.store.base import SessionRow
from nbagent.store.budget import Budget, bounded
from nbagent.store.reading import list_sessions

PAGE_SESSIONS = 200
"""Sessions one listing answer holds unless ``limit`` says otherwise."""
MAX_PAGE_SESSIONS = 1000
"""Sessions one listing answer holds at most."""
FIELD_CHARS = 500
"""Characters of one text field (title, label, model, notebook path) an entry shows at most."""
LISTING_SECONDS = 30.0
"""Seconds one listing spends reading files; the files left are listed as not read, saying so."""
_TEXT_FIELDS = ("title", "first_prompt", "label", "model", "notebook", "error")


@dataclass
class ListingPage:
    """One page of a listing: its entries, and how many the whole listing holds."""

    entries: list[dict[str, Any]]
    total: int
    more: bool = field(default=False)


@dataclass
class _Found:
    path: Readable
    api_file: str
    row: SessionRow | None = None
    error: str | None = None

    @property
    def recency(self) -> int:
        row = self.row
        return 0 if row is None else (row.last_time or row.created_at or 0)


def listing_page(
    files: Iterable[tuple[Readable, str]],
    budget: Callable[[], Budget],
    *,
    offset: int = 0,
    limit: int = PAGE_SESSIONS,
    seconds: float | None = None,
    labels: Labels | None = None,
) -> ListingPage:
    """Entries ``offset`` to ``offset + limit`` of the sessions of ``files`` (``(path, API path)``
    pairs), most recent first. A file nbagent cannot read, holds no session, or was not reached in
    ``seconds`` (``LISTING_SECONDS``) appears once as ``{"file", "error"}`` saying why (after the
    sessions). ``labels`` remembers first prompts and fork lineages between listings (the
    server's; a fresh one by default)."""
    labels = Labels() if labels is None else labels
    seconds = LISTING_SECONDS if seconds is None else seconds
    deadline = time.monotonic() + seconds
    found: list[_Found] = []
    for path, api_file in files:
        if time.monotonic() > deadline:
            found.append(_Found(path, api_file, error=_late(api_file, seconds)))
            continue
        try:
            with bounded(budget()):
                rows = list_sessions(path)
        except NbagentError as exc:
            found.append(_Found(path, api_file, error=str(exc)))
            continue
        if not rows and isinstance(path, Path):  # (a database without sessions lists none)
            found.append(_Found(path, api_file, error=no_session_reason(path, api_file)))
        found.extend(_Found(path, api_file, row=row) for row in rows)
    found.sort(key=lambda f: f.recency, reverse=True)
    page = found[offset : offset + limit]
    return ListingPage(_entries(page, budget, labels), len(found), more=offset + limit < len(found))


def _entries(page: list[_Found], budget: Callable[[], Budget], labels: Labels) -> list[dict[str, Any]]:
    """The page's entries; the labels of each file's sessions are read together (one reader)."""
    rows: dict[int, tuple[Readable, list[SessionRow]]] = {}  # by file: its rows share one path object
    for f in page:
        if f.row is not None:
            rows.setdefault(id(f.path), (f.path, []))[1].append(f.row)
    named: dict[tuple[int, str], tuple[str, Lineage]] = {}
    for key, (path, listed) in rows.items():
        for sid, label in labels.read(path, listed, budget).items():
            named[key, sid] = label
    out = []
    for f in page:
        if f.row is None:
            out.append(clipped({"file": f.api_file, "error": f.error or ""}))
        else:
            prompt, lineage = named.get((id(f.path), f.row.id), ("", NO_LINEAGE))
            out.append(clipped(session_entry(f.row, f.api_file, prompt, lineage)))
    return out


def clipped(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with each text field cut to ``FIELD_CHARS`` (an ellipsis marks the cut)."""
    for key in _TEXT_FIELDS:
        value = entry.get(key)
        if isinstance(value, str) and len(value) > FIELD_CHARS:
            entry[key] = value[: FIELD_CHARS - 1] + "…"
    return entry


def _late(api_file: str, seconds: float) -> str:
    return (
        f"{api_file} was not read: listing this folder took longer than the {seconds:g} s one listing "
        "may take; open it alone (its own listing reads only it)"
    )
