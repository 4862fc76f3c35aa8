"""Running the model's code in the user's namespace for ``run_code`` (SPEC §9.4), with bounded output.

Runs on the kernel's main thread (the caller's job): stdout and stderr are captured into bounded
buffers, the value of a final expression is kept as a bounded ``repr``, and every exception —
``KeyboardInterrupt`` and ``SystemExit`` included — becomes text in the report instead of reaching
the user's cell. Names the code defines stay in the namespace, as if the user had run it.
"""

from __future__ import annotations

import ast
import contextlib
import io
import linecache
import re
import signal
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from itertools import count
from typing import Any, cast

from nbagent.notebook.tools.namespace_view import bounded_repr

STREAM_CHARS = 4000
"""Characters kept of stdout and of stderr (the start and the end; the middle is counted)."""

RESULT_CHARS = 4000
"""Characters kept of the final expression's repr."""

ERROR_CHARS = 4000
"""Characters kept of the traceback (its end, where the error is)."""

_AGENT_MAGICS = re.compile(r"run_(?:line|cell)_magic\(\s*['\"](agent|followup|steer|inject)['\"]")
_runs = count(1)


class BoundedWriter(io.TextIOBase):
    """A text stream keeping its first and last ``limit // 2`` characters and counting the rest."""

    def __init__(self, limit: int) -> None:
        self._half = max(limit // 2, 1)
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self.total = 0

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        written = len(s)
        self.total += written
        if self._head_len < self._half:
            take = s[: self._half - self._head_len]
            self._head.append(take)
            self._head_len += len(take)
            s = s[len(take) :]
        if s:
            self._tail = (self._tail + s)[-self._half :]
        return written

    def text(self) -> str:
        head = "".join(self._head)
        omitted = self.total - len(head) - len(self._tail)
        if omitted <= 0:
            return head + self._tail
        return f"{head}\n… {omitted:,} characters omitted …\n{self._tail}"


@dataclass(frozen=True)
class CodeReport:
    """What one ``run_code`` call did, each part already bounded."""

    stdout: str = ""
    stderr: str = ""
    result: str | None = None
    """The bounded ``repr`` of the final expression's value (``None`` when there was none or it was None)."""
    error: str | None = None
    """The traceback (or the refusal) when the code did not finish."""

    def text(self) -> str:
        """The report as the model reads it: one labelled section per non-empty part."""
        parts = []
        if self.stdout:
            parts.append(f"stdout:\n{self.stdout.rstrip()}")
        if self.stderr:
            parts.append(f"stderr:\n{self.stderr.rstrip()}")
        if self.result is not None:
            parts.append(f"result:\n{self.result}")
        if self.error is not None:
            parts.append(f"error:\n{self.error.rstrip()}")
        return "\n\n".join(parts) or "(the code ran and printed nothing; its last line was not an expression)"


def _tail(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return "… (traceback start cut)\n" + text[-limit:]


def _traceback_text(exc: BaseException, filename: str) -> str:
    """The traceback from the model's code on (nbagent's own frames dropped)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    lines = traceback.format_exception(type(exc), exc, tb)
    if tb is None:  # a syntax error, or an error before the code's first line ran
        lines = traceback.format_exception_only(type(exc), exc)
    return _tail("".join(lines), ERROR_CHARS)


@contextlib.contextmanager
def _interruptible() -> Any:
    """Let a kernel interrupt (■) stop the code, on the main thread, whatever handler was in place.

    A Python handler already installed (a ``--wait`` cancelling its turn) still runs first.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: Any) -> None:
        if callable(previous) and previous is not signal.default_int_handler:
            with contextlib.suppress(KeyboardInterrupt):
                previous(signum, frame)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_code(
    code: str,
    namespace: dict[str, Any],
    *,
    transform: Callable[[str], str] | None = None,
) -> CodeReport:
    """Run ``code`` in ``namespace`` as a cell would (a final expression's value is the result).

    ``transform`` turns IPython syntax (``%magic``, ``!cmd``) into Python first; code that would
    drive nbagent itself (``%agent``, ``%followup``, ``%steer``, ``%inject``) is refused, since it
    would wait on the very turn that is running it.
    """
    filename = f"<run_code-{next(_runs)}>"
    out, err = BoundedWriter(STREAM_CHARS), BoundedWriter(STREAM_CHARS)
    result: str | None = None
    error: str | None = None
    try:
        source = transform(code) if transform is not None else code
        if _AGENT_MAGICS.search(source):
            return CodeReport(
                error="refused: run_code cannot use nbagent's own magics (%agent, %followup, %steer, "
                "%inject); they would wait on the turn that is running this code. Ask the user instead."
            )
        tree = ast.parse(source, filename, "exec")
        last = cast(ast.Expr, tree.body.pop()) if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        body = compile(tree, filename, "exec")
        final = compile(ast.Expression(last.value), filename, "eval") if last is not None else None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), _interruptible():
            exec(body, namespace)
            value = eval(final, namespace) if final is not None else None
        if value is not None:
            result = bounded_repr(value, RESULT_CHARS)
    except BaseException as exc:  # everything, so nothing reaches the user's cell
        error = _traceback_text(exc, filename)
    return CodeReport(out.text(), err.text(), result, error)
