"""The PostgreSQL backend: many sessions in one database, in a schema of their own (SPEC §6.5).

The store itself (:mod:`.store`, ``PostgresStore``), its pool, lease row, fenced writes, ``LISTEN``,
watchdog and schema listing. ``psycopg`` is an optional dependency: this package imports nothing,
and :mod:`.location` (recognising a URL, which the shared :mod:`nbagent.store.location` needs) never
imports it; the other modules import it only when a PostgreSQL store is used.
"""
