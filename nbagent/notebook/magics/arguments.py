"""Splitting a magic's line into options (parsed by ``magic_arguments``) and verbatim text.

Text such as ``what's in df?`` is not shell syntax, so it is never tokenized as such: ``split_options``
takes the options before it (and trailing flags such as ``--wait``), ``pick_options`` (``%inject``)
also takes ``--name`` options from after it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from IPython.core.error import UsageError


def split_options(line: str, valued: Collection[str], trailing: Collection[str] = ()) -> tuple[str, str]:
    """``("--rows 3 --schema-only", "df")`` for ``"--rows 3 --schema-only df"``.

    Options are the leading tokens starting with ``-``; those in ``valued`` (without ``=``) take the
    next token (quoted or not) as their value; ``--`` ends the options. The rest is returned verbatim,
    except that flags in ``trailing`` (such as ``--wait``) are also taken from the end of the text, as
    in ``%followup What stands out? --wait``.
    """
    if trailing and "--" not in line.split():
        words = line.rstrip().rsplit(None, 1)
        if len(words) == 2 and words[1] in trailing:
            options, text = split_options(words[0], valued, trailing)
            return f"{options} {words[1]}".strip(), text
    i = consumed_to = 0
    while True:
        i = _skip_space(line, i)
        if i >= len(line) or line[i] != "-":
            break
        start, i = i, _word_end(line, i)
        token = line[start:i]
        if token == "--":
            return line[:start].strip(), line[i:].lstrip()
        if token in valued:
            i = _value_end(line, _skip_space(line, i))
        consumed_to = i
    return line[:consumed_to].strip(), line[consumed_to:].strip()


def _skip_space(line: str, i: int) -> int:
    while i < len(line) and line[i].isspace():
        i += 1
    return i


def _word_end(line: str, i: int) -> int:
    while i < len(line) and not line[i].isspace():
        i += 1
    return i


def _value_end(line: str, i: int) -> int:
    """Where an option's value starting at ``i`` ends: a quoted one at its closing quote (or the end
    of the line), else at the next space."""
    if i < len(line) and line[i] in "\"'":
        end = line.find(line[i], i + 1)
        return len(line) if end == -1 else end + 1
    return _word_end(line, i)


_LONG_OPTION = re.compile(r"--[A-Za-z][\w-]*(=.*)?")


def pick_options(line: str, valued: Collection[str]) -> tuple[str, str]:
    """Options wherever they stand on the line, and the rest as text: ``("--rows 3", "df")`` for
    ``"df --rows 3"`` as for ``"--rows 3 df"``.

    Leading tokens starting with ``-`` are options (as in :func:`split_options`, and a leading ``--``
    ends them: the rest is text, verbatim); after the text starts, a token of the form ``--name`` (or
    ``--name=value``) is an option too, and those in ``valued`` take the next token (quoted or not) as
    their value. The text keeps its own spacing; one space stands where options were taken out.
    """
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", line)]
    options: list[str] = []
    runs: list[list[int]] = []  # [start, end] of text between options
    leading = previous_text = True
    i = 0
    while i < len(spans):
        start, end = spans[i]
        token = line[start:end]
        if leading and token == "--":
            return " ".join(options), line[end:].strip()
        if not ((leading and token.startswith("-")) or _LONG_OPTION.fullmatch(token)):
            if runs and previous_text and not leading:
                runs[-1][1] = end
            else:
                runs.append([start, end])
            leading, previous_text = False, True
            i += 1
            continue
        previous_text = False
        i += 1
        if _is_valued(token, valued) and i < len(spans):
            value_start = spans[i][0]
            quote = line[value_start]
            close = line.find(quote, value_start + 1) if quote in "\"'" else -1
            value_end = close + 1 if close != -1 else spans[i][1]
            token = line[start:value_end]
            while i < len(spans) and spans[i][0] < value_end:
                i += 1
        options.append(token)
    return " ".join(options), " ".join(line[a:b] for a, b in runs)


def _is_valued(token: str, valued: Collection[str]) -> bool:
    """Whether ``token`` names an option in ``valued``, whole or (as argparse allows) abbreviated."""
    return token in valued or (len(token) > 3 and len([v for v in valued if v.startswith(token)]) == 1)


def check_agent_arguments(command: str, value: list[str], keep_inbox: bool, known: Sequence[str]) -> None:
    """``UsageError`` for an unknown ``%agent`` command, or arguments it does not take."""
    if command not in known:
        raise UsageError(f"unknown %agent command {command!r}; use one of: {', '.join(known)}")
    wants_value = command in ("resume", "model", "context-limit")
    if command == "resume" and len(value) > 1:
        raise UsageError("%agent resume takes at most one argument: a session id (none: the latest)")
    if wants_value and command != "resume" and len(value) != 1:
        raise UsageError(f"%agent {command} takes exactly one argument")
    if not wants_value and value and command not in ("approve", "deny", "tools", "approvals"):
        raise UsageError(f"%agent {command} takes no argument (got {' '.join(value)!r})")
    if keep_inbox and command != "cancel":
        raise UsageError("--keep-inbox goes with `%agent cancel`")
