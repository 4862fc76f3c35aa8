"""Pruning old forks and attribution runs from a store: ``nbagent sessions prune`` (SPEC §11).

Only forks (sessions with a parent) are ever pruned, never a session started by a user. A fork
goes when its last activity is older than the cut-off, no writer holds it (its lease is taken for
the delete, so a kernel still using it keeps it), and every fork of it goes too: a session is never
left with a missing parent. Each session is deleted in one transaction (its row and whole log).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Literal

from nbagent.errors import SessionLockedError
from nbagent.log.events import SessionForked, parse_as
from nbagent.store.base import SessionRow, SessionStore
from nbagent.store.location import Where
from nbagent.store.opening import open_store

Outcome = Literal["deleted", "would delete", "in use"]


@dataclass(frozen=True)
class Pruned:
    """One fork the prune chose, and what became of it."""

    session_id: str
    parent: str
    kind: Literal["fork", "attribution"]
    """``attribution`` for a fork made by an attribution run (``session/forked`` with that purpose)."""
    events: int
    last_activity: int | None
    outcome: Outcome


def prune_sessions(
    where: Where,
    *,
    older_than_days: float,
    attribution_only: bool = False,
    dry_run: bool = False,
) -> list[Pruned]:
    """Delete the forks (or only the attribution runs) of ``where`` idle for ``older_than_days``.

    Children go before their parents. ``dry_run`` deletes nothing and says what would go.
    """
    if older_than_days < 0:
        raise ValueError(f"older_than_days must be 0 or more, not {older_than_days}")
    cutoff = int((time.time() - older_than_days * 86400) * 1000)
    store = open_store(where, "write")
    try:
        rows = {r.id: r for r in store.sessions()}
        kinds = {sid: _kind(store, sid) for sid, r in rows.items() if r.parent}
        chosen = {
            sid
            for sid, kind in kinds.items()
            if (rows[sid].last_activity or rows[sid].created_at) < cutoff
            and (kind == "attribution" or not attribution_only)
        }
        order = _children_first(rows, chosen)
        results: list[Pruned] = []
        kept: set[str] = set()
        for sid in order:
            row = rows[sid]
            if any(child in kept for child in _children(rows, sid)):
                outcome: Outcome = "in use"
            elif dry_run:
                outcome = "would delete"
            else:
                outcome = _delete(store, sid)
            if outcome == "in use":
                kept.add(sid)
            results.append(Pruned(sid, str(row.parent), kinds[sid], row.events, row.last_activity, outcome))
        return results
    finally:
        store.close()


def _kind(store: SessionStore, session_id: str) -> Literal["fork", "attribution"]:
    """What made the fork, as its ``session/forked`` record says. The store reads no payload
    itself: the log's record (the one adapter every floor reads events through) says what the
    event means, and a row the adapter cannot read is a plain fork."""
    forked = store.last_of_type(session_id, SessionForked.type)
    record = parse_as(forked, SessionForked) if forked is not None else None
    return "attribution" if isinstance(record, SessionForked) and record.purpose == "attribution" else "fork"


def _children(rows: dict[str, SessionRow], sid: str) -> list[str]:
    return [r.id for r in rows.values() if r.parent == sid]


def _children_first(rows: dict[str, SessionRow], chosen: set[str]) -> list[str]:
    """The chosen forks whose every fork is chosen too, each after all of its own forks."""
    prunable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for sid in chosen - prunable:
            if all(child in prunable for child in _children(rows, sid)):
                prunable.add(sid)
                changed = True
    order: list[str] = []

    def visit(sid: str) -> None:
        for child in _children(rows, sid):
            if child in prunable and child not in order:
                visit(child)
        if sid not in order:
            order.append(sid)

    for sid in sorted(prunable):
        visit(sid)
    return order


def _delete(store: SessionStore, sid: str) -> Outcome:
    try:
        lease = store.lease(sid)
    except SessionLockedError:
        return "in use"
    try:
        store.delete_session(sid)
    finally:
        lease.release()
    return "deleted"
