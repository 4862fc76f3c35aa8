"""What lies at a session path, and how to read a log a stopped writer left behind without
writing anything (SPEC §6.1: reads create and change nothing).

SQLite reads a ``-wal`` through its ``-shm`` index, which the first connection (re)builds: a
reader of a file whose writer crashed would create or rewrite ``-shm``. Where no writer is
alive, readers therefore read a private copy of the file and its ``-wal`` instead (within the
request's :attr:`~nbagent.store.budget.Budget.max_copy`). A ``-wal`` or ``-shm`` that is a symbolic
link or not a regular file is refused (:func:`check_sidecars`) before SQLite or a copy opens it.
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
from nbagent.store.budget import ReadLimitError, size_text
from nbagent.store.sqlite import osfile


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


SIDECARS = ("-wal", "-shm")


def check_sidecars(path: Path) -> None:
    """Refuse a session file whose ``-wal`` or ``-shm`` is a symbolic link (it could lead anywhere,
    out of the folder a server serves) or not a regular file (a FIFO would block the reader, a device
    act on read). nbagent makes neither; nothing is opened or changed."""
    for suffix in SIDECARS:
        sidecar = f"{path}{suffix}"
        try:
            mode = os.lstat(sidecar).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(mode):
            raise SessionFileError(
                f"{sidecar} is a symbolic link; nbagent reads no {suffix} through a link (it may lead out "
                f"of the folder) and did not open {path.name} — remove the link"
            )
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else _special_kind(mode)
            raise SessionFileError(
                f"{sidecar} is {kind}, not a regular file; nbagent did not open {path.name} — remove it"
            )


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

    def __init__(self, ref: osfile.FileRef, limit: int | None = None) -> None:
        """``limit``: the bytes the copy may hold at most (the main file and its -wal), or unbounded."""
        self.folder = Path(tempfile.mkdtemp(prefix="nbagent-read-"))
        self.path = self.folder / "session.sqlite"
        try:
            self._copy(ref, limit)
        except BaseException:
            self.remove()
            raise

    def _copy(self, ref: osfile.FileRef, limit: int | None) -> None:
        source, wal = ref.path, Path(f"{ref.path}-wal")
        for _ in range(5):
            before = (fingerprint(source), fingerprint(wal))
            size = ref.size()
            if limit is not None and size + (before[1][1] if before[1] else 0) > limit:
                raise ReadLimitError(
                    f"reading {source} needs a private copy of it and its -wal (a writer stopped without "
                    f"closing it), larger than the {size_text(limit)} one request may copy; read it outside "
                    "the server (nbagent transcript PATH)"
                )
            # The main file through the shared descriptor: opening and closing another one would
            # drop the POSIX locks this process's SQLite connections hold on it (see osfile).
            with open(self.path, "wb") as out:
                offset = 0
                while offset < size:
                    chunk = ref.pread(min(1 << 20, size - offset), offset)
                    if not chunk:
                        break
                    out.write(chunk)
                    offset += len(chunk)
            _copy_sidecar(wal, Path(f"{self.path}-wal"), None if limit is None else limit - size)
            if (fingerprint(source), fingerprint(wal)) == before:
                return
        raise SessionFileError(f"{source} kept changing while nbagent copied it to read it; try again")

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _copy_sidecar(source: Path, target: Path, limit: int | None) -> None:
    """Copy a ``-wal`` (SQLite holds no lock on it) without following a link or opening anything but
    a regular file, and no more than ``limit`` bytes of it."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            check_sidecars(Path(str(source).removesuffix("-wal")))  # names the link
        raise
    with os.fdopen(fd, "rb") as src:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            check_sidecars(Path(str(source).removesuffix("-wal")))
            raise SessionFileError(f"{source} is not a regular file; nbagent did not read it")
        with open(target, "wb") as out:
            copied = 0
            while chunk := src.read(1 << 20):
                copied += len(chunk)
                if limit is not None and copied > limit:
                    raise ReadLimitError(
                        f"{source} grew past the {size_text(limit)} one request may copy while nbagent "
                        "copied it; read it outside the server (nbagent transcript PATH)"
                    )
                out.write(chunk)
