"""The last executed cells, for ``recent_cells`` (SPEC §9.4): ``In[n]`` source and result or error.

Sources and results come from IPython's own history (``In``/``Out``); errors are not kept there (in
every IPython version), so a ``post_run_cell`` listener records each failing cell's ``ename: evalue``
by execution count, and ``pre_run_cell`` marks the newest cell as still running until it ends.
"""

from __future__ import annotations

from typing import Any

from nbagent.notebook.kernel.cell_events import CellEvents
from nbagent.notebook.tools.namespace_view import bounded_repr, clip

MAX_CELLS = 20
"""The most cells one ``recent_cells`` call returns."""

SOURCE_CHARS = 1500
RESULT_CHARS = 800
TOTAL_CHARS = 12_000
_KEPT_ERRORS = 200


class CellHistory:
    """Reads the shell's history; :meth:`listen` makes it follow the cells that run from now on."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._errors: dict[int, str] = {}
        self._running = False
        self._cells = CellEvents(shell, pre=self._started, post=self._finished)

    def listen(self) -> None:
        self._cells.listen()

    def unlisten(self) -> None:
        self._cells.unlisten()

    def _started(self, _info: Any) -> None:
        self._running = True

    def _finished(self, result: Any) -> None:
        """Keep the error of a failed cell (called by IPython after every cell)."""
        self._running = False
        exc = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        number = getattr(result, "execution_count", None)
        if exc is None or not isinstance(number, int):
            return
        self._errors[number] = clip(f"{type(exc).__name__}: {exc}", RESULT_CHARS)
        while len(self._errors) > _KEPT_ERRORS:
            del self._errors[min(self._errors)]

    def recent(self, count: int = 5) -> str:
        """The last ``count`` cells (at most ``MAX_CELLS``), oldest first, bounded."""
        if count < 1:
            raise ValueError(f"count must be 1 or more (got {count})")
        history = self.shell.history_manager
        sources: list[str] = list(history.input_hist_raw)
        outputs: dict[int, Any] = dict(history.output_hist)
        numbers = [n for n in range(1, len(sources)) if sources[n].strip()][-min(count, MAX_CELLS) :]
        if not numbers:
            return "No cell has run in this kernel yet."
        blocks: list[str] = []
        for n in numbers:
            running = self._running and n == len(sources) - 1
            lines = [f"In [{n}]:{' (still running)' if running else ''}"]
            lines.append(clip(sources[n].rstrip(), SOURCE_CHARS))
            if n in self._errors:
                lines.append(f"Error [{n}]: {self._errors[n]}")
            elif n in outputs:
                lines.append(f"Out [{n}]: {bounded_repr(outputs[n], RESULT_CHARS)}")
            blocks.append("\n".join(lines))
        dropped = 0
        while len(blocks) > 1 and sum(len(b) + 2 for b in blocks) > TOTAL_CHARS:
            blocks.pop(0)
            dropped += 1
        text = "\n\n".join(blocks)
        if dropped:
            text = (
                f"({dropped} older cell{'s' if dropped != 1 else ''} left out to keep this short)\n\n{text}"
            )
        if count > MAX_CELLS:
            text += f"\n\n(only the last {MAX_CELLS} cells are returned)"
        return text
