"""Assistant answers as Markdown in the live widget: a tree of data (closed set of tags, raw HTML as
text, only http(s)/mailto links, no images), built in the page with DOM calls."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hostile import ITEMS

from nbagent.views.markdown_tree import AnswerTrees, link_target, markdown_tree

TAGS = {"p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "em", "strong", "del", "code", "pre"}
TAGS |= {"blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a"}


def elements(tree: list[Any]) -> Iterator[list[Any]]:
    for t in tree:
        if isinstance(t, list):
            yield t
            yield from elements(t[2:])


def test_markdown_structure_becomes_elements_and_raw_html_stays_text() -> None:
    tree = markdown_tree(
        "# Result\n\nUse `df.head()` and **bold** <b>x</b>.\n\n1. one\n2. two\n\n"
        "| a | b |\n|:--|--:|\n| 1 | 2 |\n\n```py\nx = 1\n```\n\n<script>alert(1)</script>\n"
    )
    assert tree == [
        ["h1", {}, "Result"],
        [
            "p",
            {},
            "Use ",
            ["code", {}, "df.head()"],
            " and ",
            ["strong", {}, "bold"],
            " ",
            "<b>",
            "x",
            "</b>",
            ".",
        ],
        ["ol", {}, ["li", {}, "one"], ["li", {}, "two"]],
        [
            "table",
            {},
            ["thead", {}, ["tr", {}, ["th", {"align": "left"}, "a"], ["th", {"align": "right"}, "b"]]],
            ["tbody", {}, ["tr", {}, ["td", {"align": "left"}, "1"], ["td", {"align": "right"}, "2"]]],
        ],
        ["pre", {}, ["code", {}, "x = 1\n"]],
        "<script>alert(1)</script>\n",
    ]


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("https://example.org/a", True),
        ("mailto:a@b.c", True),
        ("javascript:alert(1)", False),
        ("JAVASCRIPT:alert(1)", False),
        ("java\tscript:alert(1)", False),
        ("data:text/html,<script>", False),
        ("vbscript:x", False),
        ("x", False),
        ("//evil.example/", False),
    ],
)
def test_a_link_keeps_only_an_absolute_http_or_mailto_target(url: str, kept: bool) -> None:
    assert (link_target(url) is not None) is kept
    tree = markdown_tree(f"[here](<{url}>)")
    links = [e for e in elements(tree) if e[0] == "a"]
    assert len(links) == (1 if kept else 0)


@pytest.mark.parametrize("name", sorted(ITEMS))
def test_the_hostile_corpus_makes_only_text_structure(name: str) -> None:
    tree = markdown_tree(ITEMS[name])
    for e in elements(tree):
        assert e[0] in TAGS
        assert set(e[1]) <= {"href", "start", "align"}
        if e[0] == "a":
            assert link_target(e[1]["href"]) == e[1]["href"]
    assert "img" not in {e[0] for e in elements(tree)}


def test_whole_answers_get_their_tree_in_snapshots_and_patches() -> None:
    trees = AnswerTrees()
    streaming = {"id": "answer-1-1", "type": "assistant", "text": "**a", "streaming": True}
    assert "md" not in trees.node(streaming)
    nodes = {"answer-1-1": {**streaming, "text": "**a**", "streaming": False}}
    ops = trees.patches(
        [
            ["add", streaming],
            ["text", "answer-1-1", "text", "**"],
            ["set", "answer-1-1", {"streaming": False}],
        ],
        nodes,
    )
    assert ops[0] == ["add", streaming] and ops[1] == ["text", "answer-1-1", "text", "**"]
    assert ops[2] == ["set", "answer-1-1", {"streaming": False, "md": [["p", {}, ["strong", {}, "a"]]]}]
    message = {"id": "m", "type": "message", "text": "**x**"}
    assert trees.node(message) is message
