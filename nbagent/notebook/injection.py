"""What ``%inject`` queues: a DataFrame summary, a bounded preview, literal text, or the last error."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from nbagent.messages import UserMessage
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


def is_expression(text: str) -> bool:
    """True when ``text`` parses as one Python expression (``df``, ``df.head(20)``, ``data["x"]``)."""
    try:
        compile(text, "<inject>", "eval")
    except (SyntaxError, ValueError):
        return False
    return True


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

    Text is literal (source ``cell``) when it is not a Python expression, when it has a ``--label``,
    or when ``literal`` (the ``%%inject`` body); otherwise it is evaluated and a failure is a usage
    error, so a mistyped variable name is not silently sent as text.
    """
    from nbagent import context

    if options.last_error:
        if text.strip():
            raise UsageError("--last-error takes no expression or text")
        if last_error is None:
            raise UsageError("no cell has raised an error since `%load_ext nbagent`")
        return context.error(last_error.ename, last_error.evalue, last_error.traceback)
    if not text.strip():
        raise UsageError("nothing to inject: give an expression, some text, or --last-error")
    if literal or options.label is not None or not is_expression(text.strip()):
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
        return context.dataframe(
            value,
            name=name,
            rows=5 if options.rows is None else options.rows,
            schema_only=options.schema_only,
            cell=cell,
        )
    if options.rows is not None or options.schema_only:
        raise UsageError(
            f"--rows and --schema-only apply to DataFrames; `{name}` is a {type(value).__name__}"
        )
    return context.variable(value, name)


def describe(message: UserMessage) -> str:
    """A few words for the one-line receipt: ``dataframe df · 100×3 · pandas``, ``text units``…"""
    return describe_message(message).title
