"""Paths the lab extension's REST API accepts: relative to the server root, and kept inside it.

A path is resolved with every symlink followed, then checked to lie inside the (equally resolved)
root: ``..`` or a link that leads out is refused (403), a missing path is 404, and hidden files and
folders are 404 unless the server was told to show them, as Jupyter's contents API does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SESSION_SUFFIX = ".nbagent.sqlite"
DEFAULT_NAME = "nbagent.sqlite"
MAX_PATH_CHARS = 1024
"""Characters of one request path at most (a longer one is refused with 422, not looked up)."""


class PathRefused(Exception):
    """A request path that cannot be served; ``status`` is the HTTP status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Resolved:
    """A path inside the root: the real file system path and the API path (``/``-separated)."""

    real: Path
    api: str


def is_session_file_name(name: str) -> bool:
    """``<stem>.nbagent.sqlite`` beside a notebook, or ``nbagent.sqlite`` (SPEC §9.5)."""
    return name.endswith(SESSION_SUFFIX) or name == DEFAULT_NAME


def _hidden(real: Path, root: Path) -> bool:
    return any(part.startswith(".") for part in real.relative_to(root).parts)


def resolve(root: str | os.PathLike[str], rel: str, *, kind: str, allow_hidden: bool = False) -> Resolved:
    """Resolve ``rel`` (an API path, ``/``-separated, relative to ``root``) to a folder or file.

    ``kind`` is ``"dir"`` or ``"file"``. Raises :class:`PathRefused` (403 outside the root, 404
    missing, hidden or of the wrong kind, 400 malformed, 422 too long or not looked up).
    """
    if "\x00" in rel:
        raise PathRefused(400, "the path holds a NUL character")
    if len(rel) > MAX_PATH_CHARS:
        raise PathRefused(
            422, f"the path is {len(rel):,} characters long, more than the {MAX_PATH_CHARS:,} this API takes"
        )
    try:
        return _resolved(root, rel, kind, allow_hidden)
    except OSError as exc:  # a name too long for the file system, a loop of links
        raise PathRefused(422, f"{rel[:200]!r} cannot be looked up: {exc.strerror or exc}") from None


def _resolved(root: str | os.PathLike[str], rel: str, kind: str, allow_hidden: bool) -> Resolved:
    root_real = Path(os.path.realpath(root))
    parts = [p for p in rel.replace("\\", "/").split("/") if p not in ("", ".")]
    real = Path(os.path.realpath(root_real.joinpath(*parts)))
    if real != root_real and root_real not in real.parents:
        raise PathRefused(403, f"{rel!r} lies outside the server root; give a path inside it")
    if not allow_hidden and real != root_real and _hidden(real, root_real):
        raise PathRefused(404, f"{rel!r} is hidden (the server does not show hidden files)")
    if kind == "dir" and not real.is_dir():
        raise PathRefused(404, f"no folder {rel!r} under the server root")
    if kind == "file" and not real.is_file():
        raise PathRefused(404, f"no file {rel!r} under the server root")
    api = "/".join(real.relative_to(root_real).parts)
    return Resolved(real, api)
