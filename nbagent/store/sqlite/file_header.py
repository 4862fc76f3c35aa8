"""What a file is, told from its first 100 bytes before SQLite opens it (SPEC §6.1).

SQLite's header keeps ``user_version`` at offset 60 and the application id at offset 68 (both
big-endian 32-bit). Reading them with a plain ``pread`` lets nbagent refuse a foreign or newer
file without SQLite ever touching it: SQLite opening a file for writing may replay or checkpoint a
leftover ``-wal``, which would change the file it was asked to leave alone.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from nbagent.errors import SessionCorruptError, SessionFileError

APPLICATION_ID = 0x6E626167  # "nbag"
SCHEMA_VERSION = 1
MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100


@dataclass(frozen=True, slots=True)
class Header:
    """The facts of a session file's header that decide whether and how nbagent may use it."""

    size: int
    """The main file's size in bytes (0: an empty file that ``open_session`` may initialise)."""
    version: int = 0
    """nbagent's schema version (``user_version``)."""
    wal: bool = False
    """The file is in WAL mode (header bytes 18 and 19 are 2)."""

    @property
    def empty(self) -> bool:
        return self.size == 0


def _wal_has_content(path: Path) -> bool:
    try:
        return os.stat(f"{path}-wal").st_size > 0
    except FileNotFoundError:
        return False


def identify(path: Path, raw: bytes, size: int) -> Header:
    """Check ``raw`` (the first bytes of the file at ``path``, ``size`` bytes long) is an nbagent file.

    Raises :class:`SessionFileError` for a foreign or newer file and :class:`SessionCorruptError`
    for a damaged one; both name the path and the way out, and nothing was changed.
    """
    if size == 0:
        if _wal_has_content(path):
            raise SessionFileError(
                f"{path} is empty but a write-ahead log ({path}-wal) lies beside it, so it is not an "
                "nbagent session file nbagent may initialise; nbagent left both unchanged — remove "
                "them or pass another path"
            )
        return Header(0)
    if len(raw) < HEADER_SIZE or not raw.startswith(MAGIC):
        raise SessionFileError(
            f"{path} is not an nbagent session file (not an SQLite database); nbagent left it "
            "unchanged — pass another path (or set NBAGENT_DB)"
        )
    (user_version,) = struct.unpack_from(">I", raw, 60)
    (app_id,) = struct.unpack_from(">I", raw, 68)
    check_ids(path, app_id, user_version)
    (page_size,) = struct.unpack_from(">H", raw, 16)
    page_size = 65536 if page_size == 1 else page_size
    (change, pages, valid_for) = (
        struct.unpack_from(">I", raw, 24)[0],
        struct.unpack_from(">I", raw, 28)[0],
        struct.unpack_from(">I", raw, 92)[0],
    )
    if pages and change == valid_for and size < pages * page_size and not os.path.exists(f"{path}-wal"):
        # Without a -wal no checkpoint can be extending the file right now: it really is short.
        raise SessionCorruptError(
            f"{path} is truncated: it holds {size} bytes, its header says {pages * page_size}; "
            "nbagent left it unchanged — restore it from a copy (or pass another path)"
        )
    return Header(size, user_version, raw[18] == 2 and raw[19] == 2)


def check_ids(path: Path, app_id: int, user_version: int) -> None:
    """Refuse a file whose application id is not nbagent's or whose schema is newer or missing.

    Used on the header bytes, and again on what SQLite reads through a leftover ``-wal`` (which
    may hold a newer first page than the main file)."""
    if app_id != APPLICATION_ID:
        what = f"application id {app_id:#x}" if app_id else "no nbagent application id"
        if user_version:
            what += f", user_version {user_version}"
        raise SessionFileError(
            f"{path} is not an nbagent session file (an SQLite database with {what}); nbagent left "
            "it and its -wal/-shm unchanged — pass another path (or set NBAGENT_DB)"
        )
    if user_version > SCHEMA_VERSION:
        raise SessionFileError(
            f"{path} has nbagent schema version {user_version}, newer than this nbagent understands "
            f"({SCHEMA_VERSION}); nbagent left it unchanged — upgrade nbagent to open it"
        )
    if user_version < 1:
        raise SessionCorruptError(
            f"{path} carries nbagent's application id but no schema version, so its header is damaged; "
            "nbagent left it unchanged — restore it from a copy or pass another path"
        )
