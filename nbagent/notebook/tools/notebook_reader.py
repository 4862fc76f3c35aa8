"""``read_notebook`` (SPEC §9.7): the notebook's cells in order, Markdown and code, with execution counts
and output text, bounded like the other built-in tools: from the live document when the front end
answers (:mod:`nbagent.notebook.tools.front_end_cells`), else from the saved ``.ipynb`` (nbformat).

The kernel finds its notebook as the session file does (:mod:`nbagent.notebook.kernel.session_file`). The result
says which it read: "the live document", or "as saved at TIME" (unsaved edits are then not in it). Cell text is data for the model, never executed; secret-shaped strings in it
(a printed API key) are hidden as in ``recent_cells``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nbagent.core.tools import ToolResult
from nbagent.notebook.tools.namespace_view import clip, shown_safely

SOURCE_CHARS = 2000
"""Characters of one cell's source at most."""
OUTPUT_CHARS = 1000
"""Characters of one cell's output text at most."""
TOTAL_CHARS = 12_000
"""Characters of the whole result at most (cells past it are named, not shown)."""

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def read_notebook_text(
    path: Path | None, *, include_outputs: bool = True, start: int = 1, live: dict[str, Any] | None = None
) -> ToolResult:
    """The cells of the notebook from cell ``start`` (counting from 1), bounded: from ``live`` (the front
    end's answer, see :mod:`nbagent.notebook.tools.front_end_cells`) when given, else from the file at ``path``."""
    if start < 1:
        return ToolResult("Error: start counts cells from 1", is_error=True, code="INVALID_ARGUMENTS")
    if live is not None:
        cells = [c for c in live["cells"] if isinstance(c, dict)]
        shown = Path(str(live.get("path") or (path.name if path else "notebook"))).name
        head = (
            f"Notebook {shown}, the live document open in the front end ({len(cells)} cells; edits not "
            "saved yet are included)"
        )
        return ToolResult(shown_safely(_bounded(head, cells, include_outputs, start)))
    if path is None:
        return _missing(
            "this kernel was not told which notebook it serves, so there is no notebook file to read "
            "(recent_cells shows the cells that ran)"
        )
    try:
        import nbformat

        saved_at = path.stat().st_mtime
        notebook = nbformat.read(os.fspath(path), as_version=4)
    except FileNotFoundError:
        return _missing(f"the notebook {path.name} has not been saved yet (no file at {path})")
    except ImportError:
        return _missing('reading the notebook needs nbformat: pip install "nbagent[notebook]"')
    except Exception as exc:  # an unreadable or invalid file: say which and why
        return _missing(f"cannot read the notebook {path}: {type(exc).__name__}: {exc}")
    cells = list(notebook.cells)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(saved_at))
    head = (
        f"Notebook {path.name}, as saved at {when} ({len(cells)} cells; edits not saved since then are "
        "not included)"
    )
    return ToolResult(shown_safely(_bounded(head, cells, include_outputs, start)))


def _bounded(head: str, cells: list[Any], include_outputs: bool, start: int) -> str:
    parts = [head]
    used = len(head)
    for number in range(start, len(cells) + 1):
        text = _cell_text(number, cells[number - 1], include_outputs)
        if used + len(text) + 2 > TOTAL_CHARS and number > start:
            parts.append(
                f"(cells {number}–{len(cells)} left out to keep this result bounded; "
                f"read_notebook(start={number}) reads on from there)"
            )
            break
        parts.append(text)
        used += len(text) + 2
    if start > len(cells):
        parts.append(f"(no cell {start}: the notebook has {len(cells)})")
    return "\n\n".join(parts)


def _cell_text(number: int, cell: Any, include_outputs: bool) -> str:
    kind = cell.get("cell_type", "?")
    source = clip(_joined(cell.get("source", "")).rstrip(), SOURCE_CHARS)
    if kind != "code":
        return f"[{number}] {kind}\n{source}"
    count = cell.get("execution_count")
    label = f"In [{count}]" if count is not None else "not run"
    lines = [f"[{number}] code · {label}", source]
    if include_outputs:
        output = clip("\n".join(_output_text(o) for o in cell.get("outputs", ())).strip(), OUTPUT_CHARS)
        if output:
            lines += ["Output:", output]
    return "\n".join(lines)


def _output_text(output: Any) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return _joined(output.get("text", ""))
    if kind == "error":
        return f"{output.get('ename', 'Error')}: {_ANSI.sub('', str(output.get('evalue', '')))}"
    data = output.get("data", {}) or {}
    if "text/plain" in data:
        return _joined(data["text/plain"])
    shown = ", ".join(sorted(data)) or "empty"
    return f"[{shown} output]"


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _missing(why: str) -> ToolResult:
    return ToolResult(f"Error: {why}", is_error=True, code="NO_NOTEBOOK")


def notebook_of(shell: Any) -> Path | None:
    """The notebook ``shell``'s kernel serves, found as the session file's place is (SPEC §9.5)."""
    from nbagent.notebook.kernel.runs import find_runner, runner_notebook
    from nbagent.notebook.kernel.session_file import notebook_path

    return notebook_path(shell.user_ns, os.environ, Path.cwd(), runner_notebook(find_runner()))


def read_notebook_tool(
    shell: Any,
    locate: Callable[[], Path | None] | None = None,
    ask: Callable[[], dict[str, Any] | None] | None = None,
) -> Any:
    """The ``read_notebook`` tool for ``shell``; ``locate`` finds the notebook file when the tool is
    called (by default :func:`notebook_of`), ``ask`` asks the front end for the live document (by
    default over a comm when ``shell`` belongs to a kernel)."""
    from nbagent.core.tools import tool as make_tool
    from nbagent.notebook.tools.front_end_cells import ask_front_end

    find = locate or (lambda: notebook_of(shell))
    if ask is None:
        ask = ask_front_end if getattr(shell, "kernel", None) is not None else (lambda: None)

    def read_notebook(include_outputs: bool = True, start: int = 1) -> ToolResult:
        """Read the user's notebook: every cell in order (Markdown and code), each code cell's
        execution count and, with include_outputs, its output text; from the document open in the
        front end when it answers, else as last saved (the result says which). Long notebooks are
        cut; the result says where to go on with start.

        Args:
            include_outputs: also show each code cell's output text
            start: the first cell to show, counting from 1
        """
        try:
            live = ask() if start >= 1 else None
            return read_notebook_text(find(), include_outputs=include_outputs, start=start, live=live)
        except Exception as exc:
            return ToolResult(f"Error: {type(exc).__name__}: {exc}", is_error=True, code="TOOL_ERROR")

    # a sync body: nbagent runs it in a worker thread, off the agent's loop (SPEC §9.7)
    return make_tool(read_notebook, parallel_safe=True)
