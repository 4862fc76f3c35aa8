"""The nbagent schemas of a PostgreSQL database, and whose each is (``nbagent sessions list URL
--user NAME`` and ``--all-users``).

docs/hub-operators.md recommends one schema per user, given to the user's role
(``ALTER ROLE alice SET nbagent.schema = 'u_alice'``). A schema's users are the roles whose
``nbagent.schema`` setting (for every database, or for this one) names it; a schema no role names
(one a URL chose) is its owner's. Only schemas holding nbagent's tables (``meta``, ``sessions``,
``events``) whose ``meta`` names nbagent as their application are listed (another application's
tables of the same names are not nbagent's: left out, not an error); each is then opened as any
store is, so a schema nbagent cannot read is refused there, naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nbagent.store.base import SessionRow
from nbagent.store.location import PostgresLocation
from nbagent.store.postgres.location import SCHEMA_SETTING, with_schema

if TYPE_CHECKING:
    import psycopg

_SCHEMAS = """
SELECT n.nspname,
       coalesce(
         (SELECT array_agg(DISTINCT r.rolname ORDER BY r.rolname)
            FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole
           WHERE s.setdatabase IN (0, (SELECT oid FROM pg_database WHERE datname = current_database()))
             AND %s || n.nspname = ANY (s.setconfig)),
         ARRAY[pg_get_userbyid(n.nspowner)]::text[])
  FROM pg_namespace n
 WHERE (SELECT count(*) FROM pg_class c
         WHERE c.relnamespace = n.oid AND c.relname IN ('meta', 'sessions', 'events') AND c.relkind IN ('r', 'p')) = 3
 ORDER BY n.nspname
"""


@dataclass(frozen=True)
class UserSchema:
    """An nbagent schema, the users it belongs to, and where to open it."""

    schema: str
    users: tuple[str, ...]
    where: PostgresLocation


def user_schemas(where: PostgresLocation) -> list[UserSchema]:
    """Every schema of ``where``'s database holding nbagent's tables, with its users, by name."""
    from nbagent.errors import NbagentError
    from nbagent.store.postgres.store import PostgresStore

    store = PostgresStore(where, mode="read")
    try:
        rows = store.run(lambda c: c.execute(_SCHEMAS, (f"{SCHEMA_SETTING}=",)).fetchall())
        try:
            ours = store.run(lambda c: _of_nbagent(c, [name for name, _ in rows]))
        except NbagentError:
            ours = {name for name, _ in rows}  # a `meta` of another shape: opening it says what it is
    finally:
        store.close()
    return [
        UserSchema(name, tuple(users), PostgresLocation(with_schema(where.url, name)))
        for name, users in rows
        if name in ours
    ]


def _of_nbagent(conn: psycopg.Connection[Any], names: list[str]) -> set[str]:
    """Those of the schemas ``names`` whose ``meta`` says nbagent is their application (one query)."""
    from psycopg import sql

    from nbagent.store.postgres.tables import APPLICATION

    if not names:
        return set()
    query = sql.SQL(" UNION ALL ").join(
        sql.SQL("SELECT {name}::text FROM {schema}.meta WHERE key = 'application' AND value = {app}").format(
            name=sql.Literal(name), schema=sql.Identifier(name), app=sql.Literal(APPLICATION)
        )
        for name in names
    )
    return {row[0] for row in conn.execute(query).fetchall()}


def schema_sessions(schema: UserSchema) -> list[SessionRow]:
    """The sessions of one schema, most recent activity first (read-only)."""
    from nbagent.store.reading import list_sessions

    return list_sessions(schema.where)
