"""Splitting a magic's line into leading options (parsed by ``magic_arguments``) and verbatim text.

Text such as ``what's in df?`` is not shell syntax, so only the options before it are tokenized.
"""

from __future__ import annotations

from collections.abc import Collection


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
    i, n = 0, len(line)
    consumed_to = 0
    while True:
        while i < n and line[i].isspace():
            i += 1
        if i >= n or line[i] != "-":
            break
        start = i
        while i < n and not line[i].isspace():
            i += 1
        token = line[start:i]
        if token == "--":
            return line[:start].strip(), line[i:].lstrip()
        if token in valued:
            while i < n and line[i].isspace():
                i += 1
            if i < n and line[i] in "\"'":
                end = line.find(line[i], i + 1)
                i = n if end == -1 else end + 1
            else:
                while i < n and not line[i].isspace():
                    i += 1
        consumed_to = i
    return line[:consumed_to].strip(), line[consumed_to:].strip()
