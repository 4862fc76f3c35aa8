"""An assistant answer's Markdown as a tree of data for the live widget, which builds it with DOM
calls and never parses HTML (the anywidget page has no sanitizer; JupyterLab's is the lab
extension's way, ``labextension/src/markdown.ts``).

mistune (the ``notebook`` extra; nbconvert's parser too) parses the text into tokens; this module
keeps a closed set of text-structure elements, ``[tag, attrs, *children]`` each, with strings for
text. Raw HTML in an answer stays text; a link keeps its target only for ``http``, ``https`` and
``mailto``; an image becomes its alt text, so nothing loads. The painter
(``labextension/src/widgets/painter.js``, ``markdownNodes``) checks the same rules again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, cast
from urllib.parse import urlsplit

from nbagent.views.schema import ViewNode

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
    if kind == "blank_line":
        return []
    if kind in ("text", "block_html", "inline_html") or depth > MAX_DEPTH:
        return [_text(t)]  # raw HTML is shown as the text it is
    leaf = _LEAVES.get(kind)  # type: ignore[arg-type]
    if leaf is not None:
        return leaf(t)
    build = _BUILDERS.get(kind)  # type: ignore[arg-type]
    if build is not None:
        return build(t, t.get("attrs") or {}, _children(t.get("children"), depth))
    if kind == "block_text":
        return _children(t.get("children"), depth)
    return [_text(t)]  # a token this module has no case for: its text


def _heading(_t: Mapping[str, Any], attrs: Mapping[str, Any], kids: Tree) -> Tree:
    level = attrs.get("level")
    return [[f"h{level}" if level in (1, 2, 3, 4, 5, 6) else "p", {}, *kids]]


def _list(_t: Mapping[str, Any], attrs: Mapping[str, Any], kids: Tree) -> Tree:
    start = attrs.get("start")
    tag_attrs = {"start": start} if attrs.get("ordered") and isinstance(start, int) else {}
    return [["ol" if attrs.get("ordered") else "ul", tag_attrs, *kids]]


def _link(_t: Mapping[str, Any], attrs: Mapping[str, Any], kids: Tree) -> Tree:
    href = link_target(attrs.get("url"))
    return [["a", {"href": href}, *kids]] if href else kids


def _cell(_t: Mapping[str, Any], attrs: Mapping[str, Any], kids: Tree) -> Tree:
    align = attrs.get("align")
    cell_attrs = {"align": align} if align in ("left", "center", "right") else {}
    return [["th" if attrs.get("head") else "td", cell_attrs, *kids]]


def _wrapping(tag: str) -> Callable[[Mapping[str, Any], Mapping[str, Any], Tree], Tree]:
    """The builder of a token that is one element around its children."""
    return lambda _t, _a, kids: [[tag, {}, *kids]]


def _image(t: Mapping[str, Any]) -> Tree:
    alt = _text(t)
    return [f"[image: {alt}]" if alt else "[image]"]


_LEAVES: dict[str, Callable[[Mapping[str, Any]], Tree]] = {
    "softbreak": lambda _t: ["\n"],
    "linebreak": lambda _t: [["br", {}]],
    "thematic_break": lambda _t: [["hr", {}]],
    "codespan": lambda t: [["code", {}, _text(t)]],
    "block_code": lambda t: [["pre", {}, ["code", {}, _text(t)]]],
    "image": _image,
}
"""Tokens whose tree is made from the token alone (their children, if any, are not read)."""

_BUILDERS: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any], Tree], Tree]] = {
    **{kind: _wrapping(tag) for kind, tag in SIMPLE.items()},
    "heading": _heading,
    "list": _list,
    "link": _link,
    "table_head": lambda _t, _a, kids: [["thead", {}, ["tr", {}, *kids]]],
    "table_cell": _cell,
}
"""Tokens whose tree wraps their children's (read once, depth first)."""


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

    def node(self, node: ViewNode) -> ViewNode:
        """``node``, with its tree when it is a whole answer (``AssistantNode.md``)."""
        tree = self._tree(node) if self._whole(node) else None
        return cast(ViewNode, {**node, "md": tree}) if tree is not None else node

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
