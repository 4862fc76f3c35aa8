"""Where a store is: a SQLite file or a PostgreSQL URL, parsed once where the user names it.

A location travels as one of these two values from the notebook (``%agent --db``, ``NBAGENT_DB``),
the command line and the Python API down to :func:`nbagent.store.opening.open_store`; nothing below
that point asks again whether a string is a URL. A PostgreSQL location keeps its URL (credentials
and all, libpq needs them) but shows itself only redacted, in ``str`` and ``repr`` alike.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from nbagent.errors import SessionFileError
from nbagent.store.postgres.location import is_postgres_url, redact, unescaped_at


@dataclass(frozen=True)
class SqliteLocation:
    """A SQLite session file (it need not exist yet); usable wherever a path is (``os.fspath``)."""

    path: Path

    def __str__(self) -> str:
        return str(self.path)

    def __fspath__(self) -> str:
        return str(self.path)

    @property
    def shown(self) -> str:
        """How messages name it."""
        return str(self.path)


@dataclass(frozen=True)
class PostgresLocation:
    """A ``postgresql://`` URL; shown (``str``, ``repr``, :attr:`shown`) without its password."""

    url: str = field(repr=False)

    def __str__(self) -> str:
        return redact(self.url)

    def __repr__(self) -> str:
        return f"PostgresLocation({redact(self.url)!r})"

    @property
    def shown(self) -> str:
        """How messages name it: ``postgresql://user@host:port/db``, never a password."""
        return redact(self.url)


StoreLocation = SqliteLocation | PostgresLocation
Where = StoreLocation | str | os.PathLike[str]
"""What the public functions accept: a location, a path, or a ``postgresql://`` URL string."""


def parse_location(where: Where, *, cwd: Path | None = None) -> StoreLocation:
    """``where`` as a location: a ``postgresql://``/``postgres://`` string is a URL, anything else a
    path (``~`` expanded; a relative path is taken against ``cwd`` when given). A URL whose password
    holds an unescaped ``@`` is refused (``SessionFileError``), never shown."""
    if isinstance(where, SqliteLocation | PostgresLocation):
        return where
    if isinstance(where, str) and is_postgres_url(where):
        if unescaped_at(where):
            raise SessionFileError(
                f"the password in {redact(where)} holds an '@': write it URL-escaped, as %40 "
                "(postgresql://user:p%40ss@host/db); nothing was opened"
            )
        return PostgresLocation(where.strip())
    if not isinstance(where, str | os.PathLike):
        raise TypeError(f"a store location is a path or a postgresql:// URL, not {type(where).__name__}")
    path = Path(where).expanduser()
    if cwd is not None and not path.is_absolute():
        path = cwd / path
    return SqliteLocation(path)
