"""What ``%inject`` queues: a DataFrame summary, a bounded preview, literal text, or the last error."""

from __future__ import annotations

import ast
import codeop
import difflib
import re
import traceback
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from IPython.core.error import UsageError

from nbagent._json import thaw
from nbagent.log.messages import DataFrameSource, UserMessage, VariableSource
from nbagent.views.labels import describe_message


@dataclass(frozen=True)
class InjectOptions:
    label: str | None = None
    rows: int | None = None
    schema_only: bool = False
    last_error: bool = False
    budget: int | None = None


DEFAULT_BUDGET = 1500
"""The token budget of a DataFrame summary or an object's preview when ``--budget`` is not given."""


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
    """How ``%inject`` parses a line: ``"expression"`` when it parses as one Python expression (``df``,
    ``df.head(20)``, ``data["x"]``), ``"unfinished"`` when it is the start of one that ends inside a
    bracket or a string (``df.head(``, ``data["x"``), ``"text"`` otherwise (``units: boxes``).
    :func:`read_line` then decides, from the names the expression uses, whether it is evaluated."""
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


@dataclass(frozen=True)
class Reading:
    """How ``%inject`` reads a line (see :func:`read_line`)."""

    kind: Literal["evaluate", "text", "unknown-name", "unfinished"]
    unknown: tuple[str, ...] = ()
    """The names the line uses that the namespace does not hold."""


def read_line(text: str, defined: Callable[[str], bool]) -> Reading:
    """The ``%inject`` rule: a Python expression whose names are all ``defined`` is evaluated; a single
    unknown name, alone or with attributes, calls or indexes after it (``revnue``, ``dff.head()``), is
    an error (a typo is likelier than one word of context); an unfinished expression (``df.head(``)
    is refused; anything else is text (``prices in EUR``, ``not important``, ``N/A``)."""
    kind = classify(text)
    if kind != "expression":
        return Reading("unfinished" if kind == "unfinished" else "text")
    tree = ast.parse(text, mode="eval")
    unknown = tuple(dict.fromkeys(n for n in _free_names(tree) if not defined(n)))
    if not unknown:
        return Reading("evaluate")
    root = _root_name(tree.body)
    if root is not None and unknown == (root,):
        return Reading("unknown-name", unknown)
    return Reading("text", unknown)


def _free_names(tree: ast.AST) -> list[str]:
    """Names the expression reads, without those it binds itself (comprehension, lambda, walrus)."""
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    bound |= {a.arg for n in ast.walk(tree) if isinstance(n, ast.arguments) for a in _all_args(n)}
    return [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in bound]


def _all_args(args: ast.arguments) -> list[ast.arg]:
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return [*args.posonlyargs, *args.args, *args.kwonlyargs, *extra]


def _root_name(node: ast.expr) -> str | None:
    """``dff`` for ``dff``, ``dff.head()``, ``dff["x"].sum()``: the name a chain of accesses starts at."""
    while isinstance(node, ast.Attribute | ast.Call | ast.Subscript):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


@dataclass(frozen=True)
class Injection:
    """What ``%inject`` queues, and why a line went as text (``as_text``: for the receipt)."""

    message: UserMessage
    as_text: str | None = None


def _last_error(text: str, last_error: LastError | None) -> Injection:
    """``%inject --last-error``: the error a cell raised or showed last (no expression with it)."""
    from nbagent import context

    if text.strip():
        raise UsageError("--last-error takes no expression or text")
    if last_error is None:
        raise UsageError(
            "no error to inject: no cell has raised or shown one since `%load_ext nbagent`; inside "
            "`except:` --last-error takes the error being handled"
        )
    return Injection(context.error(last_error.ename, last_error.evalue, last_error.traceback))


def _unknown_name(name: str, line: str, user_names: Callable[[], Iterable[str]]) -> UsageError:
    """A lone name the kernel does not know, with close ones among the user's own variables."""
    close = difflib.get_close_matches(name, sorted(set(user_names())), n=3)
    hint = f"did you mean {' or '.join(f'`{c}`' for c in close)}? " if close else ""
    return UsageError(
        f"`{name}` is not defined in this kernel; {hint}"
        f"to send it as text use `%inject --label LABEL {line}` or a %%inject cell"
    )


def build_injection(
    text: str,
    options: InjectOptions,
    *,
    evaluate: Callable[[str], Any],
    names: Callable[[], Iterable[str]],
    user_names: Callable[[], Iterable[str]] = tuple,
    last_error: LastError | None,
    cell: Mapping[str, Any] | None,
    literal: bool = False,
) -> Injection:
    """What ``%inject`` queues (SPEC §9.1), read by the rule of :func:`read_line` over ``names()``
    (the user's namespace and the builtins); the body of ``%%inject`` (``literal``) is always text.
    A lone unknown name suggests close ones among ``user_names()`` (the user's own variables).

    With ``--label`` an unknown name is text too: the label says the line is context. An expression
    that fails as it is evaluated is a usage error, never text.
    """
    from nbagent import context

    if options.last_error:
        return _last_error(text, last_error)
    if not text.strip():
        raise UsageError("nothing to inject: give an expression, some text, or --last-error")
    line = text.strip()
    known = set(names())
    reading = Reading("text") if literal else read_line(line, known.__contains__)
    if reading.kind == "unknown-name" and options.label is not None:
        reading = Reading("text", reading.unknown)
    if reading.kind == "unfinished":
        raise UsageError(
            f"`{line}` is an unfinished Python expression (it ends inside a bracket or a string): "
            "finish it, or send it as text with --label LABEL or in a %%inject cell"
        )
    if reading.kind == "unknown-name":
        raise _unknown_name(reading.unknown[0], line, user_names)
    if reading.kind == "text":
        if options.rows is not None or options.schema_only:
            raise UsageError("--rows and --schema-only apply to DataFrames, not to text")
        why = None
        if not literal and options.label is None:
            why = (
                "not a Python expression"
                if not reading.unknown
                else "it names " + ", ".join(f"`{n}`" for n in reading.unknown[:3]) + ", not defined here"
            )
        return Injection(context.cell_text(text, label=options.label, cell=cell), why)
    return Injection(_evaluated(line, options, evaluate, cell))


def _evaluated(
    name: str, options: InjectOptions, evaluate: Callable[[str], Any], cell: Mapping[str, Any] | None
) -> UserMessage:
    """The summary (a DataFrame) or preview (anything else) of the value of expression ``name``."""
    from nbagent import context

    try:
        value = evaluate(name)
    except Exception as exc:
        raise UsageError(
            f"evaluating `{name}` failed ({type(exc).__name__}: {exc}); "
            "to inject it as text use %%inject with the text in the cell body"
        ) from None
    budget = DEFAULT_BUDGET if options.budget is None else options.budget
    if context.is_dataframe(value):
        _check_budget(budget, context.DATAFRAME_MIN_BUDGET, "a DataFrame summary")
        try:
            message = context.dataframe(
                value,
                name=name,
                rows=5 if options.rows is None else options.rows,
                schema_only=options.schema_only,
                budget_tokens=budget,
                cell=cell,
            )
        except ImportError as exc:
            said = str(exc)
            if "pip install" not in said:  # the summary names the extra itself where it can
                said = f'summarizing a DataFrame needs {exc.name or exc}, which is not installed: pip install "nbagent[dataframes]"'
            raise UsageError(said) from None
    elif options.rows is not None or options.schema_only:
        raise UsageError(
            f"--rows and --schema-only apply to DataFrames; `{name}` is a {type(value).__name__}"
        )
    else:
        _check_budget(budget, context.PREVIEW_MIN_BUDGET, "a preview")
        message = context.variable(value, name, budget_tokens=budget)
    if options.label is None:
        return message
    # the message's own source (a dataframe or variable kind) with the label added
    labelled = cast(DataFrameSource | VariableSource, {**thaw(message.source)})
    labelled["label"] = options.label
    return UserMessage.text(message.plain_text, source=labelled)


_VALUES = {"--rows": "N", "--budget": "TOKENS", "--label": "LABEL"}


def inject_usage(error: str, text: str) -> str:
    """argparse's complaint about ``%inject``'s options, in the user's words: an option without its
    value says what value (``--rows N``); only an option ``%inject`` does not know suggests that
    text holding ``--`` goes after a leading ``--``."""
    missing = re.search(r"argument (--[\w-]+)(?:/[-\w]+)*: expected one argument", error)
    if missing:
        option = missing.group(1)
        example = f"%inject {text or 'df'} {option} {_VALUES.get(option, 'VALUE')}"
        return f"{option} needs a value: `{example}`"
    invalid = re.search(r"argument (--[\w-]+)(?:/[-\w]+)*: invalid int value: '([^']*)'", error)
    if invalid:
        return f"{invalid.group(1)} takes a whole number, not {invalid.group(2)!r}"
    if "unrecognized arguments" in error:
        return (
            f"{error}; text that contains `--` goes after a leading `--` (`%inject -- text`) or in a "
            "%%inject cell"
        )
    return error


def _check_budget(budget: int, least: int, what: str) -> None:
    if budget < least:
        raise UsageError(
            f"--budget {budget} is too small: {what} needs at least {least} tokens "
            f"(without --budget it gets {DEFAULT_BUDGET:,})"
        )


def describe(message: UserMessage) -> str:
    """A few words for the one-line receipt: ``dataframe df · 100×3 · pandas``, ``text units``…"""
    return describe_message(message).title


def dropped_note(message: UserMessage, budget: int) -> str:
    """For the receipt: what a summary, a table or a preview left out to fit its token budget (or
    what its text shortened itself), and how to get it whole."""
    source: Mapping[str, Any] = message.source  # producers add fields a kind's TypedDict does not list
    if source.get("kind") == "variable":
        return _preview_note(source, budget)
    if source.get("kind") != "dataframe" or not source.get("truncated"):
        return ""
    steps = list(source["truncated"])
    table = source.get("table")
    if table is not None:
        return _table_note(table, budget)
    rows = source.get("head_rows")
    parts = [_STEP_WORDS.get(s, s) for s in steps]
    if "head" in steps and isinstance(rows, list | tuple) and len(rows) == 2:
        parts[steps.index("head")] = f"head rows ({rows[1]} of the {rows[0]} asked for kept)"
    return (
        f" · dropped to fit {budget:,} tokens: {', '.join(parts)}; to get them: a bigger --budget or "
        "fewer columns (df[[…]]); --schema-only lists every column"
    )


def _table_note(table: Mapping[str, Any], budget: int) -> str:
    """A small frame's table cut to fit: which columns and rows it kept, and how to get the rest."""
    (cols, n_cols), (rows, n_rows) = table["columns"], table["rows"]
    kept = f"{cols:,} of {n_cols:,} columns" + (f", {rows:,} of {n_rows:,} rows" if rows < n_rows else "")
    return (
        f" · sent as a table without statistics (a frame this small is sent whole), cut to fit "
        f"{budget:,} tokens: {kept}; to get it whole: --budget {_round_up(table['whole_tokens'])}, or "
        "inject fewer columns (df[[…]]) or its transpose (df.T)"
    )


def _preview_note(source: Mapping[str, Any], budget: int) -> str:
    cut = source.get("cut")
    if not cut:
        return ""
    parts: list[str] = []
    if "total_chars" in cut:
        parts.append(
            f"cut to fit {budget:,} tokens: the first {cut['shown_chars']:,} of {cut['total_chars']:,} "
            f"characters; to get it whole: --budget {_round_up(cut['whole_tokens'])}"
        )
    if cut.get("elided"):
        parts.append(f"shortened by its text: {cut['elided']}; inject a part of it (x[…]) for more")
    return " · " + " · ".join(parts)


def _round_up(tokens: int) -> str:
    """A budget a little above ``tokens``, rounded up to a hundred."""
    return f"{-(-(int(tokens) + 20) // 100) * 100}"


_STEP_WORDS = {
    "samples": "sample values",
    "head": "head rows",
    "top-values": "top values",
    "middle-stats": "middle columns' statistics",
    "stats": "column statistics",
    "middle-columns": "middle column names",
    "cut": "the end of the summary",
}
