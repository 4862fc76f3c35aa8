"""An assistant answer's Markdown as a tree of data for the live widget, which builds it with DOM
calls and never parses HTML (the anywidget page has no sanitizer; JupyterLab's is the lab
extension's way, ``labextension/src/markdown.ts``).

mistune (the ``notebook`` extra; nbconvert's parser too) parses the text into tokens; this module
keeps a closed set of text-structure elements, ``[tag, attrs, *children]`` each, with strings for
text. Raw HTML in an answer stays text; a link keeps its target only for ``http``, ``https`` and
``mailto``; an image becomes its alt text, so nothing loads. The painter
(``nbagent/widgets/painter.js``, ``markdownNodes``) checks the same rules again.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any
from urllib.parse import urlsplit

Tree = list[Any]
LINK_SCHEMES = frozenset({"http", "https", "mailto"})
SIMPLE = {
    "paragraph": "p",
    "block_quote": "blockquote",
    "list_item": "li",
    "emphasis": "em",
    "strong": "strong",
    "strikethrough": "del",
    "table": "table",
    "table_body": "tbody",
    "table_row": "tr",
}
"""mistune token types that map to one element with no attributes."""
MAX_DEPTH = 40
"""Nesting kept as elements; deeper content is flattened to its text (a quote nested 1,000 deep)."""


@cache
def _parser() -> Any:
    try:
        import mistune
    except ImportError:
        return None
    return mistune.create_markdown(renderer=None, plugins=["table", "strikethrough"])


def link_target(url: Any) -> str | None:
    """``url`` when it is an absolute ``http(s)`` or ``mailto`` address, else ``None``."""
    if not isinstance(url, str) or any(ord(c) < 32 for c in url):
        return None
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return None
    return url.strip() if scheme in LINK_SCHEMES else None


def markdown_tree(text: str) -> Tree | None:
    """``text`` as a list of elements and strings, or ``None`` without mistune."""
    parse = _parser()
    if parse is None:
        return None
    return _children(parse(text), 0)


def _text(token: Mapping[str, Any]) -> str:
    if isinstance(token.get("raw"), str):
        return token["raw"]
    return "".join(_text(t) for t in token.get("children") or ())


def _children(tokens: Any, depth: int) -> Tree:
    out: Tree = []
    for token in tokens or ():
        out.extend(_token(token, depth + 1))
    return out


def _token(t: Mapping[str, Any], depth: int) -> Tree:
    kind = t.get("type")
    attrs = t.get("attrs") or {}
    if kind == "blank_line":
        return []
    if kind in ("text", "block_html", "inline_html") or depth > MAX_DEPTH:
        return [_text(t)]  # raw HTML is shown as the text it is
    if kind == "softbreak":
        return ["\n"]
    if kind == "linebreak":
        return [["br", {}]]
    if kind == "thematic_break":
        return [["hr", {}]]
    if kind == "codespan":
        return [["code", {}, _text(t)]]
    if kind == "block_code":
        return [["pre", {}, ["code", {}, _text(t)]]]
    if kind == "block_text":
        return _children(t.get("children"), depth)
    if kind == "heading":
        level = attrs.get("level")
        tag = f"h{level}" if level in (1, 2, 3, 4, 5, 6) else "p"
        return [[tag, {}, *_children(t.get("children"), depth)]]
    if kind == "list":
        start = attrs.get("start")
        tag_attrs = {"start": start} if attrs.get("ordered") and isinstance(start, int) else {}
        return [["ol" if attrs.get("ordered") else "ul", tag_attrs, *_children(t.get("children"), depth)]]
    if kind == "link":
        href = link_target(attrs.get("url"))
        kids = _children(t.get("children"), depth)
        return [["a", {"href": href}, *kids]] if href else kids
    if kind == "image":
        alt = _text(t)
        return [f"[image: {alt}]" if alt else "[image]"]
    if kind == "table_head":
        return [["thead", {}, ["tr", {}, *_children(t.get("children"), depth)]]]
    if kind == "table_cell":
        align = attrs.get("align")
        cell_attrs = {"align": align} if align in ("left", "center", "right") else {}
        return [["th" if attrs.get("head") else "td", cell_attrs, *_children(t.get("children"), depth)]]
    if kind in SIMPLE:
        return [[SIMPLE[kind], {}, *_children(t.get("children"), depth)]]
    return [_text(t)]  # a token this module has no case for: its text


class AnswerTrees:
    """Adds ``md`` (the Markdown tree) to whole assistant answers of a live widget's nodes and
    patches; each answer is parsed once per text."""

    def __init__(self) -> None:
        self._trees: dict[str, tuple[str, Tree | None]] = {}

    def _tree(self, node: Mapping[str, Any]) -> Tree | None:
        text = node.get("text") or ""
        known = self._trees.get(node["id"])
        if known is None or known[0] != text:
            known = self._trees[node["id"]] = (text, markdown_tree(text))
        return known[1]

    def _whole(self, node: Mapping[str, Any]) -> bool:
        return node.get("type") == "assistant" and not node.get("streaming") and bool(node.get("text"))

    def node(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        """``node``, with its tree when it is a whole answer."""
        tree = self._tree(node) if self._whole(node) else None
        return {**node, "md": tree} if tree is not None else node

    def patches(self, ops: list[Any], nodes: Mapping[str, Mapping[str, Any]]) -> list[Any]:
        """``ops`` with the tree added where an answer became whole or its text changed while whole."""
        out = []
        for op in ops:
            if op[0] == "add":
                op = ["add", self.node(op[1])]
            elif op[0] == "set" and ({"text", "streaming"} & op[2].keys()):
                node = nodes.get(op[1])
                tree = self._tree(node) if node is not None and self._whole(node) else None
                if tree is not None:
                    op = ["set", op[1], {**op[2], "md": tree}]
            out.append(op)
        return out
