"""Whether a path lives on a network file system, where SQLite's WAL mode is not safe (SPEC §6.5).

WAL needs shared memory that every process sees on one host, and its locks are unreliable over
NFS and SMB; on such a mount nbagent uses SQLite's rollback journal instead. The file system type
comes from ``statfs(2)``'s magic number; a FUSE mount is told apart by its subtype (``sshfs``,
``s3fs``…) from ``/proc/self/mountinfo``. Linux only: elsewhere nothing is detected.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
from pathlib import Path

NETWORK_MAGIC: dict[int, str] = {
    0x6969: "NFS",
    0x517B: "SMB",
    0xFF534D42: "CIFS/SMB",
    0xFE534D42: "SMB2",
    0x5346414F: "AFS",
    0x6B414653: "AFS",
    0x73757245: "Coda",
    0x00C36400: "CephFS",
    0x01021997: "9P",
    0x0BD00BD0: "Lustre",
    0x47504653: "GPFS",
    0x01161970: "GFS2",
    0x7461636F: "OCFS2",
    0x564C: "NCP",
}
"""``statfs`` magic numbers of network (or cluster) file systems, as in Linux's ``magic.h``."""

FUSE_MAGIC = 0x65735546
NETWORK_FUSE = frozenset(
    {
        "sshfs", "s3fs", "gcsfuse", "rclone", "glusterfs", "ceph-fuse", "juicefs", "davfs", "davfs2",
        "blobfuse", "blobfuse2", "goofys", "mount-s3", "mfs", "lizardfs", "seaweedfs", "curlftpfs",
        "smbnetfs", "gvfsd-fuse", "objectivefs", "cvmfs2", "alluxio-fuse", "geesefs", "wekafs",
    }
)  # fmt: skip
"""FUSE subtypes (``fuse.<subtype>`` in ``/proc/self/mountinfo``) that reach a network store."""


def classify(magic: int, fuse_subtype: str | None = None) -> str | None:
    """The network file system a ``statfs`` magic number (and FUSE subtype) names, or None if local."""
    if magic in NETWORK_MAGIC:
        return NETWORK_MAGIC[magic]
    if magic == FUSE_MAGIC and fuse_subtype and fuse_subtype.lower() in NETWORK_FUSE:
        return f"FUSE ({fuse_subtype})"
    return None


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (the file may not exist yet)."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


@functools.cache
def _libc() -> ctypes.CDLL | None:
    """The C library, found once: the process's own symbols (``dlopen(NULL)``) hold ``statfs``;
    ``ctypes.util.find_library`` would run ``ldconfig -p`` in a subprocess at every session open."""
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def filesystem_magic(path: str | os.PathLike[str]) -> int | None:
    """``statfs(2)``'s ``f_type`` for ``path`` (or its nearest existing parent); None where unknown."""
    if os.uname().sysname != "Linux":
        return None
    libc = _libc()
    if libc is None:
        return None
    # struct statfs begins with f_type, a C long (__fsword_t) on every Linux ABI Python runs on.
    buf = ctypes.create_string_buffer(256)
    if libc.statfs(os.fsencode(_existing(Path(path))), buf) != 0:
        return None
    return ctypes.c_ulong.from_buffer(buf).value & 0xFFFFFFFF


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def mount_type(path: str | os.PathLike[str], mountinfo: str | None = None) -> str | None:
    """The ``fstype`` (e.g. ``fuse.sshfs``) of the mount holding ``path``, from ``/proc/self/mountinfo``."""
    if mountinfo is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
        except OSError:
            return None
    target = os.path.realpath(path)
    best: tuple[int, str] | None = None
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if not sep or len(fields) < 5:
            continue
        point = _unescape(fields[4])
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= best[0]):
            best = (len(point), right.split()[0] if right.split() else "")
    return None if best is None else best[1]


def network_filesystem(path: str | os.PathLike[str]) -> str | None:
    """The kind of network file system ``path`` is on (``"NFS"``, ``"FUSE (sshfs)"``…), or None."""
    magic = filesystem_magic(path)
    if magic is None:
        return None
    subtype = None
    if magic == FUSE_MAGIC:
        fstype = mount_type(path) or ""
        subtype = fstype.partition(".")[2] or None
    return classify(magic, subtype)


def notice(path: str | os.PathLike[str], kind: str) -> str:
    """The one line saying why this file does not use WAL, and the way to a shared store."""
    return (
        f"nbagent: {path} is on a network file system ({kind}), where SQLite's WAL mode is unsafe; "
        "using the rollback journal (slower; one writer at a time). For shared or network-home "
        "sessions use PostgreSQL: NBAGENT_DB=postgresql://…"
    )


_noticed: set[str] = set()


def journal_mode(path: str | os.PathLike[str]) -> str:
    """``"WAL"``, or ``"DELETE"`` (the rollback journal) on a network file system, saying why once
    per file and process on the ``nbagent`` logger (a warning: shown in notebooks and scripts)."""
    kind = network_filesystem(path)
    if kind is None:
        return "WAL"
    key = os.path.abspath(path)
    if key not in _noticed:
        _noticed.add(key)
        logging.getLogger("nbagent").warning(notice(key, kind))
    return "DELETE"
