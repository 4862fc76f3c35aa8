"""What lies at a session path, and how to read a log a stopped writer left behind without
writing anything (SPEC §6.1: reads create and change nothing).

SQLite reads a ``-wal`` through its ``-shm`` index, which the first connection (re)builds: a
reader of a file whose writer crashed would create or rewrite ``-shm``. Where no writer is
alive, readers therefore read a private copy of the file and its ``-wal`` instead.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import struct
import tempfile
from pathlib import Path

from nbagent.errors import SessionFileError
from nbagent.store import osfile


def regular_or_missing(path: Path) -> bool:
    """Whether a regular file is at ``path`` (``False``: nothing is). Anything else is refused
    before any ``open(2)``, which blocks forever on a FIFO and may act on a device."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if not stat.S_ISREG(mode):
        raise SessionFileError(
            f"{path} is {_special_kind(mode)}, not a session file; nbagent did not open it — pass the "
            "path of a session file (or of a file to create)"
        )
    return True


def _special_kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def fingerprint(path: Path | str) -> tuple[int, ...] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def locked_from(ref: osfile.FileRef, start: int) -> bool | None:
    """Whether another open file (any process, this one included) holds a lock on the file at or
    beyond byte ``start`` (where writers' leases lie); ``None`` where the platform cannot tell."""
    if not hasattr(fcntl, "F_OFD_GETLK"):
        return None
    query = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, start, 0, 0)
    answer = fcntl.fcntl(ref.entry.fd, fcntl.F_OFD_GETLK, query + b"\0" * (32 - len(query)))
    return struct.unpack_from("h", answer)[0] != fcntl.F_UNLCK


class Snapshot:
    """A private copy of a session file and its leftover ``-wal``, read instead of the original."""

    def __init__(self, ref: osfile.FileRef) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="nbagent-read-"))
        self.path = self.folder / "session.sqlite"
        try:
            self._copy(ref)
        except BaseException:
            self.remove()
            raise

    def _copy(self, ref: osfile.FileRef) -> None:
        source, wal = ref.path, Path(f"{ref.path}-wal")
        for _ in range(5):
            before = (fingerprint(source), fingerprint(wal))
            # The main file through the shared descriptor: opening and closing another one would
            # drop the POSIX locks this process's SQLite connections hold on it (see osfile).
            with open(self.path, "wb") as out:
                size, offset = ref.size(), 0
                while offset < size:
                    chunk = ref.pread(min(1 << 20, size - offset), offset)
                    if not chunk:
                        break
                    out.write(chunk)
                    offset += len(chunk)
            try:
                shutil.copyfile(wal, f"{self.path}-wal")  # SQLite holds no lock on the -wal itself
            except FileNotFoundError:
                pass
            if (fingerprint(source), fingerprint(wal)) == before:
                return
        raise SessionFileError(f"{source} kept changing while nbagent copied it to read it; try again")

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
