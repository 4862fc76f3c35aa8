"""Failures to use a session file, as nbagent errors that name the path, the cause and the way out
(SPEC §6.1): never a bare ``sqlite3`` or ``OSError``."""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from nbagent.errors import SessionCorruptError, SessionFileError, SessionWriteError
from nbagent.store import budget as read_budget

T = TypeVar("T")
# SQLite's result codes (``sqlite3`` names them from Python 3.11; ``sqlite_errorcode`` is 3.11+ too).
_IOERR, _INTERRUPT, _FULL, _TOOBIG = 10, 9, 13, 18
BUSY_TIMEOUT_MS = 10_000
"""How long a SQLite statement waits for another connection's lock before it fails."""


def file_error(path: Path, exc: BaseException, doing: str) -> SessionFileError:
    """Turn an ``OSError`` or ``sqlite3.Error`` into an nbagent error naming the path and the remedy."""
    text = str(exc)
    code = getattr(exc, "sqlite_errorcode", None)
    low = text.lower()
    budget = read_budget.current()
    if budget is not None and isinstance(exc, sqlite3.Error):
        if code == _INTERRUPT or "interrupted" in low:
            return budget.interrupted(str(path))
        if code == _TOOBIG or "too big" in low:
            return budget.too_long(str(path))
    if isinstance(exc, IsADirectoryError) or (isinstance(exc, OSError) and exc.errno == errno.EISDIR):
        return SessionFileError(
            f"{path} is a directory, not a session file; pass a file path such as {path / 'nbagent.sqlite'}"
        )
    if (
        (isinstance(exc, OSError) and exc.errno == errno.ENOSPC)
        or "disk is full" in low
        or code == _FULL
        or (((code is not None and code & 0xFF == _IOERR) or "disk i/o error" in low) and _nearly_full(path))
    ):
        return SessionWriteError(
            f"{doing} {path} failed: the disk is full; free some space there (or pass a path on another "
            "disk) and try again — nothing was recorded"
        )
    if (
        isinstance(exc, PermissionError)
        or (isinstance(exc, OSError) and exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM))
        or "readonly" in low
        or "read-only" in low
    ):
        return SessionFileError(
            f"{doing} {path} failed: it is not writable here ({text}); make it and its folder "
            "writable, or pass a path in a folder you can write"
        )
    if "malformed" in low or "not a database" in low or code in (11, 26):
        return SessionCorruptError(
            f"{path} is damaged ({text}); nbagent will not write to it — restore it from a copy, "
            "or pass another path"
        )
    if "locked" in low or "busy" in low:
        return SessionWriteError(
            f"{doing} {path} failed: another connection held it locked for "
            f"{BUSY_TIMEOUT_MS // 1000} s ({text}); nothing was recorded — try again, or close the "
            "program holding it"
        )
    return SessionFileError(f"{doing} {path} failed ({text}); check the path and its permissions")


def guard(path: Path, doing: str, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except (sqlite3.Error, OSError) as exc:
        raise file_error(path, exc, doing) from exc


NEARLY_FULL = 1 << 20
"""Free bytes below which an I/O error from SQLite is taken for a full disk: SQLite reports a
failed write or a failed extension of its -shm as "disk I/O error" without the ``ENOSPC``."""


def _nearly_full(path: Path) -> bool:
    for where in (path, path.parent):
        try:
            st = os.statvfs(where)
        except OSError:
            continue
        return st.f_bavail * st.f_frsize < NEARLY_FULL
    return False
