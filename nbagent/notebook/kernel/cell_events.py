"""Following the cells that run: a ``pre_run_cell`` and a ``post_run_cell`` callback, registered on
the shell together and removed together."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class CellEvents:
    """One listener's two callbacks on IPython's cell events."""

    def __init__(self, shell: Any, *, pre: Callable[[Any], None], post: Callable[[Any], None]) -> None:
        self._shell = shell
        self._callbacks = (("pre_run_cell", pre), ("post_run_cell", post))

    def listen(self) -> None:
        for name, callback in self._callbacks:
            self._shell.events.register(name, callback)

    def unlisten(self) -> None:
        """Remove both callbacks (one that is not registered is passed over)."""
        for name, callback in self._callbacks:
            try:
                self._shell.events.unregister(name, callback)
            except ValueError:
                pass
