"""Keep a trailing ``?`` in ``%followup what is in df?`` as part of the message.

IPython reads ``name?`` at the end of a line as a help request, which would swallow a natural
question. This cleanup transformer rewrites such a line magic into the equivalent
``get_ipython().run_line_magic(...)`` call before IPython looks for help syntax. A line that is only
the verb and question marks (``%inject?``, ``%agent ??``) is left alone: that is IPython's help.
"""

from __future__ import annotations

import re

VERBS = ("inject", "followup", "steer", "agent")
_LINE = re.compile(
    r"^(?P<indent>[ \t]*)%(?P<verb>" + "|".join(VERBS) + r")(?P<rest>(?:[ \t].*)?\?)[ \t]*(?P<eol>\r?\n?)$"
)


def keep_question_marks(lines: list[str]) -> list[str]:
    """An ``input_transformers_cleanup`` entry: rewrite ``%verb …?`` lines, leave all others."""
    if lines and lines[0].lstrip().startswith("%%"):
        return lines  # a cell magic: its body is text and IPython leaves it alone
    out = []
    for line in lines:
        match = _LINE.match(line)
        if match is None:
            out.append(line)
            continue
        rest = match["rest"].strip()
        if rest.strip("?") == "":
            out.append(line)  # `%verb?` / `%verb ??`: a help request, not a message
            continue
        out.append(
            f"{match['indent']}get_ipython().run_line_magic({match['verb']!r}, {rest!r}){match['eol']}"
        )
    return out
