"""The one-writer lease: an OS lock (``flock``) held for the writer's lifetime, freed when it dies."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from nbagent.errors import SessionLockedError


def _lease_dir() -> Path:
    import tempfile  # only when a writer opens: keeps ``import nbagent`` light

    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = Path(tempfile.gettempdir()) / f"nbagent-leases-{uid}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


class Lease:
    """Exclusive write access to one session of one file, for as long as this object holds it.

    The lock file lives in the temp directory, keyed by the database file's device and inode, so
    no clutter lands beside the notebook and a restarted kernel can take over at once.
    """

    def __init__(self, db_path: Path, session_id: str) -> None:
        st = os.stat(db_path)
        self.path = _lease_dir() / f"{st.st_dev}-{st.st_ino}-{session_id}.lock"
        self.session_id = session_id
        self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self._fd, 400, 0).decode("utf-8", "replace").strip() or "an unknown holder"
            os.close(self._fd)
            self._fd = None
            raise SessionLockedError(
                f"session {session_id} in {db_path} is open for writing by {holder}; close it there "
                "(agent.close() or %agent close) or stop that kernel, then try again"
            ) from None
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        holder = f"process {os.getpid()} on {os.uname().nodename} (since {stamp})"
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, holder.encode(), 0)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                os.ftruncate(fd, 0)
            finally:
                os.close(fd)
