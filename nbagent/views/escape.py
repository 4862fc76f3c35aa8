"""The two escapes every painter uses for data (model text, prompts, tool names and results, file
and model names, titles): one for HTML, one for Markdown.

Data is shown as the text it is, never as markup: no tag, entity, link, image or emphasis in it
takes effect. The browser-side painters (the widgets' JS, the lab extension) put data into the DOM
as text (``textContent``) and build no HTML from strings.
"""

from __future__ import annotations

import html
import re

_INLINE = {"&": "&amp;", "<": "&lt;", ">": "&gt;"} | {c: "\\" + c for c in "`*_[]~|"}
"""How each character that means something inline is written: ``& < >`` as entities (no HTML tag,
autolink or entity survives); code, emphasis, link and image brackets, strikethrough and table bars
backslash-escaped (CommonMark allows it for any ASCII punctuation)."""
_MATH = re.compile(r"[\\$]+")
"""Runs of the characters that make math (``$…$``, ``\\(…\\)``, ``\\begin``): each run is shown as
a code span, which Markdown shows as typed and no math renderer looks into (JupyterLab and
MathJax typeset ``$`` found anywhere else in the page's text, escaped or not)."""
_AUTOLINK = {":": "\\:", ".": "\\.", "@": "<!---->@"}
"""How GFM's autolinks (a bare ``https://``, ``http://`` or ``ftp://`` URL, a ``www.`` name, an
e-mail address, also after ``mailto:``/``xmpp:``) are defeated, whichever renderer reads the text:
the ``:`` of ``://`` and the ``.`` after ``www`` are backslash-escaped (an autolink is recognised in
the source, before escapes resolve: marked, mistune, cmark-gfm); every ``@`` gets an empty HTML
comment in front, which splits the text where cmark-gfm looks for addresses after parsing (GitHub)
and shows nothing."""
_AUTOLINK_CHARS = r":(?=//)|(?<=[wW]{3})\.|@"
_INLINE_CHARS = re.compile(_MATH.pattern + "|[" + re.escape("".join(_INLINE)) + "]|" + _AUTOLINK_CHARS)
_LINE_START = re.compile(r"(?P<lead>[ \t]*)(?:(?P<mark>[#+=-])|(?P<digits>\d{1,9})(?P<dot>[.)]))?")
"""A line's indentation and a block marker after it (heading, list item, setext underline)."""


BIDI_MARKS = {
    "\u202a": "LRE",
    "\u202b": "RLE",
    "\u202c": "PDF",
    "\u202d": "LRO",
    "\u202e": "RLO",
    "\u2066": "LRI",
    "\u2067": "RLI",
    "\u2068": "FSI",
    "\u2069": "PDI",
    "\u200e": "LRM",
    "\u200f": "RLM",
    "\u061c": "ALM",
}
"""The bidirectional controls, each with the name its visible mark shows (``BIDI`` in painter.js)."""
_BIDI = re.compile("[" + "".join(BIDI_MARKS) + "]")


def visible_controls(text: str) -> str:
    """``text`` with each bidirectional control shown as a visible mark (``⟨RLO⟩``), so data cannot
    reorder what a view shows around it ("forked from ‹…› 2 nrut erofeb"). Both escapes and the
    plain-text views apply it."""
    return _BIDI.sub(lambda m: f"⟨{BIDI_MARKS[m[0]]}⟩", text)


def escape_html(text: str) -> str:
    """``text`` as HTML text or an attribute value: ``& < > " '`` become entities, bidirectional
    controls visible marks."""
    return html.escape(visible_controls(text), quote=True)


def escape_markdown(text: str) -> str:
    """Markdown that renders as exactly ``text``, line by line, with no markup of its own.

    Inline syntax is escaped (``_INLINE``; an escaped ``>`` starts no quote), autolinks are broken
    (``_AUTOLINK``), bidirectional controls are visible marks, and so is a line's block marker (``#``, ``-``, ``+``, ``=``, ``1.``); leading indentation becomes non-breaking spaces
    (no code block), and each line break inside a paragraph is a hard break, so lines stay lines.
    """
    lines = visible_controls(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
    shown = [_line(line) if line.strip() else "" for line in lines]
    out = []
    for i, line in enumerate(shown):
        follows = i + 1 < len(shown) and shown[i + 1] != ""
        out.append(line + "\\" if line and follows else line)
    return "\n".join(out)


def _line(line: str) -> str:
    start = _LINE_START.match(line)
    if start is None:  # never: every part of the pattern is optional
        return _inline(line)
    lead = start["lead"].replace("\t", "    ").replace(" ", "&nbsp;")
    if start["mark"]:
        head = "\\" + start["mark"]
    elif start["digits"]:
        head = start["digits"] + "\\" + start["dot"]
    else:
        head = ""
    return lead + head + _inline(line[start.end() :])


def _inline(text: str) -> str:
    return _INLINE_CHARS.sub(_inline_one, text)


def _inline_one(match: re.Match[str]) -> str:
    found = match[0]
    if found[0] in "\\$":
        return f"`{found}`"
    return _INLINE.get(found) or _AUTOLINK[found]
