"""The one-writer lease: an operating-system lock on a byte range of the session file itself.

Every session of a file has its own range, far beyond anything SQLite locks or stores, in the
``.sqlite`` file: every process that opens that file on this machine sees the lock, whatever its
temp folder or environment, and nothing is written or left behind. The kernel drops the lock when
its holder dies, so a restarted kernel takes over at once.

On Linux the lock is an open-file-description lock (``F_OFD_SETLK``): unlike classic POSIX record
locks it survives the closing of other descriptors of the file (SQLite opens and closes its own),
and it conflicts between agents of one process too. Its length encodes the holder's process id,
so a refused opener can name the holder without any side file. Where the platform has no
open-file-description locks (macOS), only agents of one process exclude each other.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
import time
from pathlib import Path

from nbagent.errors import SessionLockedError
from nbagent.store.sqlite import osfile

_BASE = 1 << 48
_SLOT = 1 << 24
"""Each session's range starts at ``_BASE + slot * _SLOT``; a holder locks ``pid + 1`` bytes there."""
_PID_SPAN = 1 << 23
FIRST_LEASE_BYTE = _BASE
"""Where the first session's lease range starts: nothing of SQLite's lies at or beyond it."""

_OFD = hasattr(fcntl, "F_OFD_SETLK")


def _start(session_id: str) -> int:
    digest = hashlib.blake2b(session_id.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return _BASE + int.from_bytes(digest, "big") * _SLOT


def _flock(kind: int, start: int, length: int) -> bytes:
    # struct flock {short l_type; short l_whence; off_t l_start; off_t l_len; pid_t l_pid;}
    raw = struct.pack("hhqqi", kind, os.SEEK_SET, start, length, 0)
    return raw + b"\0" * (32 - len(raw))


def _holder_pid(fd: int, start: int) -> int | None:
    """The process id encoded in the conflicting lock at ``start``, if one is held."""
    answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _flock(fcntl.F_WRLCK, start, _PID_SPAN))
    kind, _, held_start, held_len, _ = struct.unpack("hhqqi", answer[: struct.calcsize("hhqqi")])
    if kind == fcntl.F_UNLCK or held_start != start:
        return None
    return held_len - 1


def _describe(pid: int | None) -> str:
    if pid is None:
        return "another process"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        cmd = ""
    return f"process {pid}" + (f" ({cmd[:120]})" if cmd else "")


class Lease:
    """Exclusive write access to one session of one file, for as long as this object holds it."""

    def __init__(self, db_path: Path, session_id: str) -> None:
        self.session_id = session_id
        self.db_path = db_path
        self._ref: osfile.FileRef | None = osfile.acquire(db_path)
        self._start = _start(session_id)
        try:
            self._take()
        except BaseException:
            self._ref.release()
            self._ref = None
            raise

    def _refused(self, holder: str) -> SessionLockedError:
        return SessionLockedError(
            f"session {self.session_id} in {self.db_path} is open for writing by {holder}; close it "
            "there (agent.close() or %agent close) or stop that kernel, then try again"
        )

    def _take(self) -> None:
        assert self._ref is not None
        entry = self._ref.entry
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with osfile.registry_lock():
            if self.session_id in entry.leases:
                raise self._refused(entry.leases[self.session_id])
            entry.leases[self.session_id] = f"another agent of this process {os.getpid()} (since {stamp})"
        try:
            if _OFD:
                fd = self._ref.writable_fd()
                lock = _flock(fcntl.F_WRLCK, self._start, os.getpid() + 1)
                try:
                    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, lock)
                except (BlockingIOError, PermissionError):
                    raise self._refused(_describe(_holder_pid(fd, self._start))) from None
        except BaseException:
            with osfile.registry_lock():
                entry.leases.pop(self.session_id, None)
            raise

    @property
    def held(self) -> bool:
        return self._ref is not None

    def release(self) -> None:
        ref, self._ref = self._ref, None
        if ref is None:
            return
        entry = ref.entry
        try:
            if _OFD and entry.wfd is not None:
                fcntl.fcntl(entry.wfd, fcntl.F_OFD_SETLK, _flock(fcntl.F_UNLCK, self._start, os.getpid() + 1))
        finally:
            with osfile.registry_lock():
                entry.leases.pop(self.session_id, None)
            ref.release()
