"""PostgreSQL URLs as store locations: recognising them and showing them without credentials.

Kept free of ``psycopg`` so that recognising a URL never needs the optional dependency.
"""

from __future__ import annotations

import os
import re
from urllib.parse import parse_qs, parse_qsl, quote, unquote, urlencode, urlsplit

SCHEMES = ("postgresql://", "postgres://")
DEFAULT_SCHEMA = "nbagent"
SCHEMA_SETTING = "nbagent.schema"
"""A custom server setting naming the schema to use instead of ``nbagent`` (e.g. in the URL:
``?options=-c%20nbagent.schema%3Dteam_a``, or ``PGOPTIONS="-c nbagent.schema=team_a"``)."""


def is_postgres_url(location: object) -> bool:
    """Whether ``location`` is a ``postgresql://`` (or ``postgres://``) URL rather than a file path."""
    return isinstance(location, str) and location.strip().lower().startswith(SCHEMES)


def unescaped_at(url: str) -> bool:
    """Whether the user-and-password part of ``url`` holds an ``@`` of its own (a password written
    without ``%40``): libpq would take the password's tail for the host, and say so in its errors."""
    rest = url.strip().split("://", 1)[-1]
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    return authority.count("@") > 1


def redact(url: str) -> str:
    """``url`` as ``postgresql://user@host:port/dbname``: never a password, never other parameters.

    Values the URL leaves out (user, host, database) are shown as libpq would fill them from the
    ``PG*`` variables where set, so the shown address says which server is meant.
    """
    try:
        parts = urlsplit(url.strip())
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        host = unquote(parts.hostname or "") or query.get("host") or os.environ.get("PGHOST", "")
        port = (str(parts.port) if parts.port else "") or query.get("port") or os.environ.get("PGPORT", "")
        user = unquote(parts.username or "") or query.get("user") or os.environ.get("PGUSER", "")
        dbname = unquote(parts.path.lstrip("/")) or query.get("dbname") or os.environ.get("PGDATABASE", "")
    except ValueError:
        return "postgresql://(an unreadable URL)"
    if "/" in host:  # a Unix-socket folder
        host = f"[{host}]"
    netloc = (f"{user}@" if user else "") + host + (f":{port}" if port else "")
    return f"postgresql://{netloc}/{dbname}"


_SCHEMA_OPTION = re.compile(r"(?:^|\s)(?:-c\s*|--)" + re.escape(SCHEMA_SETTING) + r"=(\S*)")


def split_schema(url: str) -> tuple[str | None, str]:
    """``(schema, url)``: the ``nbagent.schema`` the URL's ``options`` name (read here, on the
    client), and the URL without it — what is sent to the server.

    A pooler in transaction mode (PgBouncer) refuses startup ``options``, and a server setting would
    be session state, so the schema a URL names never reaches the server; a schema set for the role
    or database (``ALTER ROLE … SET nbagent.schema``) is still read from the server.
    """
    parts = urlsplit(url.strip())
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    schema: str | None = None
    kept: list[tuple[str, str]] = []
    for key, value in pairs:
        if key == "options":
            found = _SCHEMA_OPTION.findall(value)
            if found:
                schema = found[-1]
                value = " ".join(_SCHEMA_OPTION.sub(" ", value).split())
                if not value:
                    continue
        kept.append((key, value))
    if schema is None:
        return None, url.strip()
    query = urlencode(kept, quote_via=quote)
    rebuilt = f"{parts.scheme}://{parts.netloc}{parts.path}" + (f"?{query}" if query else "")
    return schema or None, rebuilt + (f"#{parts.fragment}" if parts.fragment else "")


def url_secrets(url: str) -> list[str]:
    """The passwords that could appear in a libpq message: the URL's, and ``PGPASSWORD``."""
    found = [os.environ.get("PGPASSWORD", "")]
    try:
        found.append(unquote(urlsplit(url.strip()).password or ""))
    except ValueError:
        pass
    found += [unquote(v) for v in parse_qs(urlsplit(url.strip()).query).get("password", [])]
    return [s for s in found if s]


def with_schema(url: str, schema: str) -> str:
    """``url`` naming ``schema`` as its nbagent schema (in place of any it named)."""
    _, bare = split_schema(url)
    parts = urlsplit(bare)
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    option = f"-c {SCHEMA_SETTING}={schema}"
    if any(key == "options" for key, _ in pairs):
        pairs = [(k, f"{v} {option}" if k == "options" else v) for k, v in pairs]
    else:
        pairs.append(("options", option))
    query = urlencode(pairs, quote_via=quote)
    return f"{parts.scheme}://{parts.netloc}{parts.path}?{query}" + (
        f"#{parts.fragment}" if parts.fragment else ""
    )
