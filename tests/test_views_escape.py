"""The escapes every painter uses (:mod:`nbagent.views.escape`), over the one hostile corpus
(``tests/hostile.json``): HTML and Markdown built from data have no markup of their own and show
the data as written; the transcripts and static HTML of a session full of it stay inert."""

from __future__ import annotations

import ast
import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hostile import ITEMS, same_text
from hostile_session import ALL, MODEL_NAME, TOOL_NAME, write_hostile_session
from nbconvert.filters.markdown_mistune import markdown2html_mistune

import nbagent
from nbagent.labserver.export import transcript as export_transcript
from nbagent.views import inbox_html, inbox_model, live_turn_html, timeline_html, timeline_json, transcript
from nbagent.views.escape import escape_html, escape_markdown, visible_controls
from nbagent.views.html import DETAIL_MAX

ROOT = Path(__file__).resolve().parents[1]
BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
"""A bidirectional control, raw."""
HOSTILE_TAGS = {"script", "img", "svg", "iframe", "a", "u", "object", "embed", "math", "link", "meta"}


class Tags(HTMLParser):
    """The start tags of an HTML text, with their attributes, and its text."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def names(self) -> set[str]:
        return {tag for tag, _ in self.tags}

    def foreign(self) -> list[tuple[str, dict[str, str | None]]]:
        """Tags that data could have brought: none of nbagent's own (nbconvert's heading anchors and
        the export page's charset are not data)."""
        return [
            (tag, attrs)
            for tag, attrs in self.tags
            if tag in HOSTILE_TAGS
            and not (tag == "a" and (attrs.get("href") or "").startswith("#"))
            and not (tag == "meta" and set(attrs) == {"charset"})
        ]

    def handlers(self) -> list[str]:
        return [k for _, attrs in self.tags for k in attrs if k.startswith("on")]


@pytest.mark.parametrize("name", ITEMS)
def test_escaped_html_is_text_that_reads_as_written(name: str) -> None:
    text = ITEMS[name]
    escaped = escape_html(text)
    assert not set("<>\"'") & set(escaped)
    shown = visible_controls(text)  # bidirectional controls as visible marks
    assert html.unescape(escaped) == shown and not BIDI.search(escaped)
    page = Tags(f'<p title="{escaped}">{escaped}</p>')
    assert page.tags == [("p", {"title": shown})]
    assert "".join(page.text) == shown


@pytest.mark.parametrize("name", ITEMS)
def test_escaped_markdown_renders_as_the_text_and_nothing_else(name: str) -> None:
    """Rendered as nbconvert renders Markdown: paragraphs, line breaks and (around math
    characters) code spans only, the text as written."""
    text = ITEMS[name]
    rendered = Tags(markdown2html_mistune(escape_markdown(text)))
    assert rendered.names() <= {"p", "br", "code"}, rendered.tags
    assert same_text("".join(rendered.text)) == same_text(visible_controls(text))


@pytest.mark.parametrize("name", ITEMS)
def test_escaped_markdown_renders_as_the_text_and_nothing_else_on_github(name: str) -> None:
    """Rendered by GitHub's renderer (cmark-gfm, with its autolink extension): no bare URL, `www.`
    name or e-mail address in data becomes a link either."""
    cmarkgfm = pytest.importorskip("cmarkgfm")
    text = ITEMS[name]
    rendered = Tags(cmarkgfm.github_flavored_markdown_to_html(escape_markdown(text)))
    assert rendered.names() <= {"p", "br", "code"}, rendered.tags
    assert same_text("".join(rendered.text)) == same_text(visible_controls(text))


def test_escaped_markdown_makes_no_autolink() -> None:
    import cmarkgfm

    text = "https://a.invalid/x http://b.invalid ftp://c.invalid www.d.invalid Www.e.invalid f@g.invalid"
    escaped = escape_markdown(text)
    assert escaped == (
        "https\\://a.invalid/x http\\://b.invalid ftp\\://c.invalid www\\.d.invalid Www\\.e.invalid "
        "f<!---->@g.invalid"
    )
    for html_out in (markdown2html_mistune(escaped), cmarkgfm.github_flavored_markdown_to_html(escaped)):
        assert "<a" not in html_out and same_text("".join(Tags(html_out).text)) == text


def test_bidirectional_controls_show_as_visible_marks_in_every_python_painter() -> None:
    spoof = "forked from \u202ebefore turn 2\u202c"
    assert visible_controls(spoof) == "forked from ⟨RLO⟩before turn 2⟨PDF⟩"
    assert visible_controls("\u2066\u2067\u2068\u2069\u202a\u202b\u202d\u200e\u200f\u061c") == (
        "⟨LRI⟩⟨RLI⟩⟨FSI⟩⟨PDI⟩⟨LRE⟩⟨RLE⟩⟨LRO⟩⟨LRM⟩⟨RLM⟩⟨ALM⟩"
    )
    assert escape_html(spoof) == "forked from ⟨RLO⟩before turn 2⟨PDF⟩"
    assert escape_markdown(spoof) == "forked from ⟨RLO⟩before turn 2⟨PDF⟩"
    assert visible_controls("שלום, مرحبا") == "שלום, مرحبا"  # right-to-left text itself is left alone


def test_the_plain_text_views_mark_bidirectional_controls(hostile_file: tuple[Path, str]) -> None:
    from nbagent.views import inbox_text, live_turn_text, timeline_text

    path, sid = hostile_file
    events = nbagent.read_events(path, sid)
    bundle = timeline_json(events, max_text=None)
    pending = bundle["pending"]
    texts = [
        timeline_text(bundle),
        live_turn_text(timeline_json(events, turn=1, headline=ITEMS["bidi"])),
        inbox_text(inbox_model(pending["next_step"], pending["next_turn"], "idle")),
        transcript(events, escape=False),
    ]
    for text in texts:
        assert not BIDI.search(text)
    assert "forked from ⟨RLO⟩before turn 2⟨PDF⟩" in texts[1]


def test_escaped_markdown_keeps_lines_and_marks_no_block() -> None:
    assert escape_markdown("# a\n- b\n1. c\n    d\n\n> e") == (
        "\\# a\\\n\\- b\\\n1\\. c\\\n&nbsp;&nbsp;&nbsp;&nbsp;d\n\n&gt; e"
    )
    assert escape_markdown("a \\(x\\) $y$ `z` *w*") == "a `\\`(x`\\`) `$`y`$` \\`z\\` \\*w\\*"
    assert escape_markdown("plain words, it's 3.5 e.g.") == "plain words, it's 3.5 e.g."


@pytest.fixture(scope="module")
def hostile_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("hostile") / "h.nbagent.sqlite"
    return path, write_hostile_session(path)


def test_a_hostile_sessions_markdown_transcripts_are_inert_and_show_every_payload(
    hostile_file: tuple[Path, str],
) -> None:
    path, sid = hostile_file
    events = nbagent.read_events(path, sid)
    for md in (transcript(events, title=ITEMS["script"]), export_transcript(path, sid, fmt="md")):
        rendered = Tags(markdown2html_mistune(md))
        assert rendered.foreign() == []
        assert rendered.handlers() == []
        shown = same_text("".join(rendered.text))
        assert not BIDI.search(md)  # every bidirectional control a visible mark, fences included
        assert same_text(visible_controls(ALL)) in shown  # the model's answer, line by line
        for name in (TOOL_NAME, MODEL_NAME, ITEMS["md-image"]):  # a tool's and the model's name, a prompt
            assert same_text(name) in shown


def test_a_hostile_sessions_static_html_is_inert_and_shows_every_payload(
    hostile_file: tuple[Path, str],
) -> None:
    path, sid = hostile_file
    events = nbagent.read_events(path, sid)
    bundle = timeline_json(events, max_text=None)  # every payload whole
    pages = [
        timeline_html(bundle),
        live_turn_html(timeline_json(events, turn=1, headline=ITEMS["style"])),
        inbox_html(inbox_model(bundle["pending"]["next_step"], bundle["pending"]["next_turn"], "idle")),
        export_transcript(path, sid, fmt="html"),
    ]
    for page in pages:
        parsed = Tags(page)
        assert parsed.foreign() == []
        assert parsed.handlers() == []
        assert not [name for name, text in ITEMS.items() if "<" in text and text in page]  # no raw markup
        assert not BIDI.search(page)
    shown = same_text("".join(Tags(pages[0]).text))
    assert len(ALL) <= DETAIL_MAX, "the corpus must fit in one item of the static view to be seen whole"
    assert same_text(visible_controls(ALL)) in shown and same_text(TOOL_NAME) in shown


def test_views_build_html_and_markdown_from_data_only_through_the_one_escape() -> None:
    """No other module escapes HTML by itself, and no browser-side painter parses strings as HTML
    except the approval prompt's context, which is nbagent's own escaped HTML of the turn, and the
    lab extension's Markdown answers, which JupyterLab's sanitizer (an allow-list of text-structure
    tags) has cleaned before they are parsed, in an inert document."""
    for source in (ROOT / "nbagent").rglob("*.py"):
        if source.name == "escape.py" and source.parent.name == "views":
            continue
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "html":
                pytest.fail(f"{source.relative_to(ROOT)} imports from html: use nbagent.views.escape")
    painters = [
        *(ROOT / "labextension" / "src" / "widgets").glob("*.js"),
        *(ROOT / "labextension" / "src").glob("*.ts"),
    ]
    raw = re.compile(
        r"innerHTML|outerHTML|insertAdjacentHTML|createContextualFragment|DOMParser|document\.write"
    )
    uses = [
        (p.name, line.strip()) for p in painters for line in p.read_text().splitlines() if raw.search(line)
    ]
    assert uses == [
        (
            "approval.js",
            'context.innerHTML = model.get("context_html") || ""; // nbagent\'s own escaped rendering of the turn',
        ),
        ("markdown.ts", "box.innerHTML = html;"),
    ]
    markdown = (ROOT / "labextension" / "src" / "markdown.ts").read_text()
    assert markdown.index("= sanitizer.sanitize(") < markdown.index("box.innerHTML = html;")
