"""One raw descriptor per session file per process, shared by header reads and writer leases.

POSIX record locks (the ones SQLite takes on its files) belong to a process and a file: closing
*any* descriptor of that file drops every such lock the process holds on it, SQLite's included.
So nbagent never opens and closes a raw descriptor of a session file while one of its own SQLite
connections may be open on it: each file (device and inode) gets one read-only descriptor, opened
by the first user in the process (a connection, a header read, a lease), shared by all, and closed
only after the last of them is done.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path

Key = tuple[int, int]


@dataclass(eq=False)
class _Entry:
    key: Key
    fd: int
    """Read-only: header reads, and the lease's queries."""
    wfd: int | None = None
    """Read-write, opened for the first lease (a write lock needs a descriptor open for writing)."""
    extra: list[int] = field(default_factory=list)
    users: int = 0
    leases: dict[str, str] = field(default_factory=dict)
    """Sessions of this file leased by agents of this process, with a description of each holder."""


_lock = threading.Lock()
_entries: dict[Key, _Entry] = {}


class FileRef:
    """One user's share of a file's descriptor; :meth:`release` exactly once when done."""

    __slots__ = ("_entry", "path")

    def __init__(self, entry: _Entry, path: Path) -> None:
        self._entry: _Entry | None = entry
        self.path = path

    @property
    def entry(self) -> _Entry:
        if self._entry is None:
            raise ValueError(f"the descriptor of {self.path} was released")
        return self._entry

    @property
    def key(self) -> Key:
        return self.entry.key

    def pread(self, size: int, offset: int) -> bytes:
        return os.pread(self.entry.fd, size, offset)

    def size(self) -> int:
        return os.fstat(self.entry.fd).st_size

    def writable_fd(self) -> int:
        """A read-write descriptor of the file (opened once, kept with the read-only one)."""
        entry = self.entry
        with _lock:
            if entry.wfd is None:
                fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) != entry.key:
                    entry.extra.append(fd)  # replaced meanwhile: never close it early either
                    raise FileNotFoundError(f"{self.path} was replaced while it was being opened")
                entry.wfd = fd
            return entry.wfd

    def release(self) -> None:
        entry, self._entry = self._entry, None
        if entry is None:
            return
        with _lock:
            entry.users -= 1
            if entry.users > 0:
                return
            del _entries[entry.key]
            fds = [entry.fd, *([entry.wfd] if entry.wfd is not None else []), *entry.extra]
        for fd in fds:
            os.close(fd)


def acquire(path: Path) -> FileRef:
    """Share the descriptor of the existing file at ``path`` (``OSError`` if it cannot be opened)."""
    st = os.stat(path)
    key = (st.st_dev, st.st_ino)
    with _lock:
        entry = _entries.get(key)
        if entry is not None:
            entry.users += 1
            return FileRef(entry, path)
    # Non-blocking: a FIFO swapped in since the caller's check must not block open(2) forever.
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    key = (st.st_dev, st.st_ino)
    with _lock:
        entry = _entries.get(key)
        if entry is None:
            entry = _entries[key] = _Entry(key, fd)
        else:  # another thread opened it meanwhile: keep ours open until the entry closes
            entry.extra.append(fd)
        entry.users += 1
        return FileRef(entry, path)


def registry_lock() -> threading.Lock:
    """The lock guarding every entry's ``leases`` (held briefly by :mod:`nbagent.store.sqlite.lease`)."""
    return _lock


def _forget_after_fork() -> None:
    # A forked child shares the parent's open file descriptions, and with them the parent's
    # leases: it must neither release them nor take them over. It starts with its own entries
    # (and a fresh lock: another thread may have held the old one at the fork).
    global _lock
    _lock = threading.Lock()
    _entries.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
