"""What names a listed session besides its title (SPEC §9.6, §11.2): its first typed prompt and,
for a fork, its purpose and last replay.

One listing page reads them through one reader per file (or database), and the server remembers
them: a session's first prompt never changes once written (the log is append-only), and a fork's
lineage stays what it was while its event count does. A panel that re-lists an open database
every few seconds therefore costs one ``sessions()`` query per poll, not two reads per entry.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from nbagent.errors import NbagentError
from nbagent.labserver.sessions import PROMPT_SCAN, Readable, first_prompt, identity
from nbagent.log.events import (
    SESSION_FORKED,
    SESSION_REPLAYED,
    EventParseError,
    SessionForked,
    SessionReplayed,
    parse_event,
)
from nbagent.store.base import SessionRow, StoreReader
from nbagent.store.budget import Budget, bounded
from nbagent.store.opening import open_reader

Lineage = tuple[str | None, str | None]
"""A fork's ``(purpose, replay_text)``; ``(None, None)`` for a session that is no fork."""
NO_LINEAGE: Lineage = (None, None)


class Labels:
    """First prompts and fork lineages of listed sessions, remembered (least recently used out)."""

    def __init__(self, size: int = 20_000) -> None:
        self.size = size
        self._known: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()
        self.reads = 0
        """Sessions whose labels were read from their store (for tests and benchmarks)."""

    def __len__(self) -> int:
        with self._lock:
            return len(self._known)

    def read(
        self, path: Readable, rows: Sequence[SessionRow], budget: Callable[[], Budget]
    ) -> dict[str, tuple[str, Lineage]]:
        """Each row's ``(first_prompt, lineage)``: the prompt only for a session without a title,
        the lineage only for a fork. What is not remembered is read through one reader, under one
        ``budget()`` for the file; a session whose read fails gets ``("", NO_LINEAGE)`` (its row
        is listed all the same)."""
        try:
            where = identity(path)
        except OSError:
            where = None  # gone meanwhile: read (and fail) without remembering
        out: dict[str, tuple[str, Lineage]] = {}
        missing: list[SessionRow] = []
        for row in rows:
            found = self._recall(where, row)
            if found is None:
                missing.append(row)
            else:
                out[row.id] = found
        if missing:
            out.update(self._read_missing(path, where, missing, budget))
        return out

    def _recall(self, where: tuple[Any, ...] | None, row: SessionRow) -> tuple[str, Lineage] | None:
        if where is None:
            return None
        with self._lock:
            prompt = "" if row.title else self._get((*where, row.id))
            lineage = self._get((*where, row.id, row.events)) if row.parent else NO_LINEAGE
        if prompt is None or lineage is None:
            return None
        return prompt, lineage

    def _read_missing(
        self,
        path: Readable,
        where: tuple[Any, ...] | None,
        rows: list[SessionRow],
        budget: Callable[[], Budget],
    ) -> dict[str, tuple[str, Lineage]]:
        out = {row.id: ("", NO_LINEAGE) for row in rows}
        with bounded(budget()):
            try:
                reader = open_reader(path)
            except NbagentError:
                return out
            with self._lock:
                self.reads += len(rows)
            try:
                for row in rows:
                    try:
                        out[row.id] = self._read_one(reader, row)
                    except (NbagentError, EventParseError):  # (a crafted record: this row only)
                        continue
                    if where is not None:
                        self._remember(where, row, *out[row.id])
            finally:
                reader.close(checkpoint=False)
        return out

    @staticmethod
    def _read_one(reader: StoreReader, row: SessionRow) -> tuple[str, Lineage]:
        prompt = "" if row.title else first_prompt(reader.events(row.id, limit=PROMPT_SCAN))
        return prompt, (read_lineage(reader, row.id) if row.parent else NO_LINEAGE)

    def _remember(self, where: tuple[Any, ...], row: SessionRow, prompt: str, lineage: Lineage) -> None:
        with self._lock:
            if prompt and not row.title:  # an empty one may still come (the prompt is not written yet)
                self._put((*where, row.id), prompt)
            if row.parent:
                self._put((*where, row.id, row.events), lineage)

    def _get(self, key: tuple[Any, ...]) -> Any:
        value = self._known.get(key)
        if value is not None:
            self._known.move_to_end(key)
        return value

    def _put(self, key: tuple[Any, ...], value: Any) -> None:
        self._known[key] = value
        self._known.move_to_end(key)
        while len(self._known) > self.size:
            self._known.popitem(last=False)


def read_lineage(reader: StoreReader, session_id: str) -> Lineage:
    """A fork's ``session/forked.purpose`` (``attribution`` for §11.5's runs) and its last replay
    in words: two indexed reads."""
    from nbagent.views.replays import replay_text

    forked = reader.last_of_type(session_id, SESSION_FORKED)
    replayed = reader.last_of_type(session_id, SESSION_REPLAYED)
    fork = parse_event(forked) if forked is not None else None
    last = parse_event(replayed) if replayed is not None else None
    # a fork of a fork copies its parent's records: only its own (after its session/forked) count
    own = last is not None and fork is not None and last.seq > fork.seq
    return (
        fork.purpose if isinstance(fork, SessionForked) else None,
        replay_text(last) if own and isinstance(last, SessionReplayed) else None,
    )
