"""What ``%inject`` queues: a DataFrame summary, a bounded preview, literal text, or the last error."""

from __future__ import annotations

import codeop
import traceback
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from nbagent.core.messages import UserMessage
from nbagent.views.labels import describe_message


@dataclass(frozen=True)
class InjectOptions:
    label: str | None = None
    rows: int | None = None
    schema_only: bool = False
    last_error: bool = False


@dataclass(frozen=True)
class LastError:
    """The last exception raised by a cell, as the user saw it (captured by ``post_run_cell``)."""

    ename: str
    evalue: str
    traceback: str

    @classmethod
    def of(cls, exc: BaseException) -> LastError:
        """The error as the user saw it: its traceback without IPython's own frames."""
        frames = [
            f
            for f in traceback.extract_tb(exc.__traceback__)
            if "/IPython/" not in f.filename.replace("\\", "/")
        ]
        text = "Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
        text += "".join(traceback.format_exception_only(type(exc), exc))
        return cls(type(exc).__name__, str(exc), text)


def classify(text: str) -> str:
    """How ``%inject`` reads a line: ``"expression"`` when it parses as one Python expression (``df``,
    ``df.head(20)``, ``data["x"]``), ``"unfinished"`` when it is the start of one that ends inside a
    bracket or a string (``df.head(``, ``data["x"``), ``"text"`` otherwise (``prices are in EUR``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarnings about the text itself (an escape, say)
        try:
            compile(text, "<inject>", "eval")
            return "expression"
        except (SyntaxError, ValueError, OverflowError):
            pass
        try:
            unfinished = codeop.compile_command(text, symbol="eval") is None
        except (SyntaxError, ValueError, OverflowError):
            unfinished = False
    return "unfinished" if unfinished else "text"


def build_injection(
    text: str,
    options: InjectOptions,
    *,
    evaluate: Callable[[str], Any],
    last_error: LastError | None,
    cell: Mapping[str, Any] | None,
    literal: bool = False,
) -> UserMessage:
    """The message ``%inject`` queues (SPEC §9.1).

    Text is literal (source ``cell``) when it has a ``--label``, when ``literal`` (the ``%%inject``
    body), or when it is not a Python expression; an expression is evaluated and a failure is a usage
    error, so a mistyped variable name is not silently sent as text; an unfinished expression
    (``df.head(``) is refused for the same reason (see :func:`classify`).
    """
    from nbagent import context

    if options.last_error:
        if text.strip():
            raise UsageError("--last-error takes no expression or text")
        if last_error is None:
            raise UsageError(
                "no error to inject: no cell has raised one since `%load_ext nbagent`; inside `except:` "
                "--last-error takes the error being handled"
            )
        return context.error(last_error.ename, last_error.evalue, last_error.traceback)
    if not text.strip():
        raise UsageError("nothing to inject: give an expression, some text, or --last-error")
    kind = "text" if literal or options.label is not None else classify(text.strip())
    if kind == "unfinished":
        raise UsageError(
            f"`{text.strip()}` is an unfinished Python expression (it ends inside a bracket or a string): "
            "finish it, or send it as text with --label LABEL or in a %%inject cell"
        )
    if kind == "text":
        if options.rows is not None or options.schema_only:
            raise UsageError("--rows and --schema-only apply to DataFrames, not to text")
        return context.cell_text(text, label=options.label, cell=cell)
    name = text.strip()
    try:
        value = evaluate(name)
    except Exception as exc:
        raise UsageError(
            f"`{name}` looks like an expression but evaluating it failed ({type(exc).__name__}: {exc}); "
            "to inject it as text use %%inject with the text in the cell body"
        ) from None
    if context.is_dataframe(value):
        try:
            return context.dataframe(
                value,
                name=name,
                rows=5 if options.rows is None else options.rows,
                schema_only=options.schema_only,
                cell=cell,
            )
        except ImportError as exc:
            said = str(exc)
            if "pip install" not in said:  # the summary names the extra itself where it can
                said = f'summarizing a DataFrame needs {exc.name or exc}, which is not installed: pip install "nbagent[dataframes]"'
            raise UsageError(said) from None
    if options.rows is not None or options.schema_only:
        raise UsageError(
            f"--rows and --schema-only apply to DataFrames; `{name}` is a {type(value).__name__}"
        )
    return context.variable(value, name)


def describe(message: UserMessage) -> str:
    """A few words for the one-line receipt: ``dataframe df · 100×3 · pandas``, ``text units``…"""
    return describe_message(message).title
