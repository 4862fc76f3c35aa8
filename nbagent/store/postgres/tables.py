"""The tables of an nbagent schema on PostgreSQL: what creates them, their version, and the lock
that serialises creating or upgrading a schema (used by ``store.py``)."""

from __future__ import annotations

import hashlib

from nbagent.store.postgres.lease import LEASES_DDL

APPLICATION = "nbagent"
SCHEMA_VERSION = 2
"""1: meta, sessions, events (leases were advisory locks); 2: adds ``leases`` (a writer migrates 1)."""
TABLES = frozenset({"meta", "sessions", "events", "leases"})
TABLES_V1 = TABLES - {"leases"}
DDL = (
    """
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
CREATE INDEX events_inbox_quiet ON {schema}.events (session_id, seq) WHERE inbox_pending = 0;
"""
    + LEASES_DDL
)


def schema_lock(schema: str) -> int:
    """The transaction-level advisory lock key that serialises creating or upgrading ``schema``."""
    digest = hashlib.blake2b(f"nbagent schema\0{schema}".encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)
