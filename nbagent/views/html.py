"""The static HTML rendering of the view model: saved outputs, GitHub, nbviewer, nbconvert.

No script: turns and items are ``<details>`` elements styled by the widgets' own stylesheet
(every rule scoped under ``.nbagent``, badges are ``<span>``s, so a host page's CSS for ``code``
or ``pre`` does not recolour them). It paints the JSON bundle, so it shows what the widget shows:
the same labels, outcomes and reasons. Size grows gently: older turns keep only their head, and
long texts are cut at a word.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from nbagent.views.escape import escape_html
from nbagent.views.meter import bar_html, legend_html
from nbagent.views.proposals import proposal_html
from nbagent.views.text import clip, plural

Node = Mapping[str, Any]
KEEP_OPEN = 3
"""The last turns shown opened (older ones start collapsed, as in the live widget)."""
DETAIL_MAX = 1500
"""Characters of an item's text kept in the snapshot (cut at a word, ``…``)."""
ROW_MAX = 300
NO_MATH = "tex2jax_ignore mathjax_ignore"
"""Classes MathJax 2 and 3 skip: a ``$`` in data is not typeset as math where a page runs MathJax
(JupyterLab's HTML outputs, nbconvert's pages)."""


@cache
def stylesheet() -> str:
    """The widgets' CSS (shared by the live widgets, the live cell and these snapshots)."""
    return resources.files("nbagent.views").joinpath("nbagent.css").read_text(encoding="utf-8")


def _span(cls: str, text: str, **data: str) -> str:
    attrs = "".join(f' data-{k.replace("_", "-")}="{escape_html(v)}"' for k, v in data.items())
    return f'<span class="{cls}"{attrs}>{escape_html(text)}</span>'


def badge(kind: str, text: str, role: str = "") -> str:
    extra = {"role": role} if role else {}
    return _span("nba-badge", text, kind=kind or "unknown", **extra)


def pill(status: str, text: str) -> str:
    return _span("nba-pill", text, status=status)


def _pre(text: str, limit: int = DETAIL_MAX) -> str:
    return f"<pre>{escape_html(clip(text, limit))}</pre>"


def _wrap(kind: str, body: str, **data: str) -> str:
    attrs = "".join(f' data-{k}="{escape_html(v)}"' for k, v in data.items())
    return (
        f'<div class="nbagent-static {NO_MATH}"><style>{stylesheet()}</style>'
        f'<div class="nbagent {kind}"{attrs}>{body}</div></div>'
    )


def _details(cls: str, row: str, detail: str, **data: str) -> str:
    attrs = "".join(f' data-{k}="{escape_html(v)}"' for k, v in data.items())
    if not detail:
        return f'<div class="nba-item {cls}"{attrs}><div class="nba-row">{row}</div></div>'
    return (
        f'<details class="nba-item {cls}"{attrs}><summary class="nba-row">{row}</summary>'
        f'<div class="nba-detail">{detail}</div></details>'
    )


def message_row(n: Node) -> str:
    """Badge, label, first line, ``+N lines`` and size: one row of a message or an inbox item."""
    row = badge(n["kind"], n["badge"], n["role"])
    if n.get("via"):
        row += _span("nba-muted", f"via {n['via']}")
    if n["label"]:
        row += _span("nba-label", n["label"])
    row += _span("nba-line", n["first_line"])
    if n["more_text"]:
        row += _span("nba-more", n["more_text"])
    row += _span("nba-size", n["size_text"])
    if n.get("tokens_text"):  # a pending item: what it will add to the next request (SPEC §12)
        row += _span("nba-size", n["tokens_text"])
    return row


def _node(n: Node, kids: Mapping[str | None, list[Node]]) -> str:
    paint = _PAINTERS.get(n["type"])
    if paint is not None:
        return paint(n, kids)
    if isinstance(n.get("text"), str):  # a node type this renderer has no case for: its words
        return _mark_html(n["type"], n["text"])
    return ""


def _mark_html(mark: str, text: str, **data: str) -> str:
    more = "".join(f' data-{k}="{escape_html(v)}"' for k, v in data.items())
    return f'<div class="nba-mark" data-mark="{escape_html(mark)}"{more}>{escape_html(text)}</div>'


def _message_html(n: Node, _kids: Mapping[str | None, list[Node]]) -> str:
    return _details("nba-msg", message_row(n), _pre(n["text"]), id=n["id"], kind=n["kind"], role=n["role"])


def _answer_html(n: Node, _kids: Mapping[str | None, list[Node]]) -> str:
    row = badge("assistant", "assistant")
    if n["outcome"]:
        row += _span("nba-outcome", n["outcome"])
    row += _span("nba-answer-text", clip(n["text"], DETAIL_MAX) or n["first_line"])
    if n["calls_text"]:
        row += _span("nba-muted", n["calls_text"])
    detail = f'<div class="nba-source">reasoning</div>{_pre(n["reasoning"])}' if n["reasoning"] else ""
    cls = "nba-answer" + (" nba-failed" if n["failed"] else "")
    return _details(cls, row, detail, id=n["id"])


def _tool_html(n: Node, _kids: Mapping[str | None, list[Node]]) -> str:
    row = (
        badge("tool", "tool")
        + f"<b>{escape_html(n['name'])}</b>"
        + _span("nba-tool-args", n["arguments_text"])
    )
    status = n["outcome"] if n["is_error"] or n["result"] is None else "→"
    row += _span("nba-outcome", status) + _span("nba-line", n["result_line"])
    detail = f'<div class="nba-source">arguments</div>{_pre(n["arguments"])}'
    if n["result"] is not None:
        detail += f'<div class="nba-source">{"error" if n["is_error"] else "result"}</div>{_pre(n["result"])}'
    cls = "nba-tool" + (" nba-tool-error" if n["is_error"] else "")
    return _details(cls, row, detail, id=n["id"], outcome=n["outcome"])


def _step_html(n: Node, kids: Mapping[str | None, list[Node]]) -> str:
    inner = "".join(_node(k, kids) for k in kids.get(n["id"], ()))
    head = f"{escape_html(n['label'])} {bar_html(n)}".rstrip()
    return f'<div class="nba-step" data-id="{escape_html(n["id"])}"><div class="nba-step-head">{head}</div>{inner}</div>'


def _retry_html(n: Node, _kids: Mapping[str | None, list[Node]]) -> str:
    return _mark_html("retry", n["text"] + (f" — {clip(n['why'], ROW_MAX)}" if n.get("why") else ""))


_PAINTERS: dict[str, Callable[[Node, Mapping[str | None, list[Node]]], str]] = {
    "message": _message_html,
    "assistant": _answer_html,
    "tool": _tool_html,
    "step": _step_html,
    "turn": lambda n, kids: turn_html(n, kids, opened=True),
    "retry": _retry_html,
    "proposal": lambda n, _kids: proposal_html(n),
    "approval": lambda n, _kids: _mark_html("approval", n["text"], outcome=n.get("outcome") or "asked"),
    "mark": lambda n, _kids: _mark_html(n["mark"], n["text"]),
}
"""The static painting of each node type (others show their words as a mark, as painter.js does)."""


def turn_head(n: Node) -> str:
    """The head of a turn: number, prompt, outcome (failed turns say why), steps, time, status pill."""
    head = (
        _span("nba-caret", "") + f"<b>Turn {escape_html(str(n['turn']))}</b>" + _span("nba-line", n["title"])
    )
    if n["why"] is not None:
        head += _span("nba-outcome", n["outcome"])
    head += _span("nba-muted", n["steps_text"])
    if n["duration_text"]:
        head += _span("nba-muted", n["duration_text"])
    return head + pill(n["status"], n["status_text"])


def turn_html(n: Node, kids: Mapping[str | None, list[Node]], *, opened: bool, body: bool = True) -> str:
    inner = ""
    if body:
        why = (
            f'<div class="nba-why"><b>Why:</b> {escape_html(clip(n["why"], DETAIL_MAX))}</div>'
            if n["why"]
            else ""
        )
        inner = (
            f'<div class="nba-turn-body">{why}{"".join(_node(k, kids) for k in kids.get(n["id"], ()))}</div>'
        )
    return (
        f'<details class="nba-turn" data-id="{escape_html(n["id"])}" data-status="{escape_html(n["status"])}"'
        f'{" open" if opened else ""}><summary class="nba-turn-head">{turn_head(n)}</summary>{inner}</details>'
    )


def _head(title: str, muted: str, status: str, status_text: str) -> str:
    return (
        f'<div class="nba-head"><span class="nba-title">{escape_html(title)}</span>{_span("nba-muted", muted)}'
        f'<span class="nba-grow"></span>{pill(status, status_text)}</div>'
    )


def _children(nodes: Sequence[Node]) -> dict[str | None, list[Node]]:
    kids: dict[str | None, list[Node]] = {}
    for n in nodes:
        kids.setdefault(n.get("parent"), []).append(n)
    return kids


def timeline_html(bundle: Mapping[str, Any]) -> str:
    """The whole-session bundle as static HTML: recent turns opened, older ones collapsed."""
    kids = _children(bundle["nodes"])
    top = kids.get(None, [])
    turns = [n for n in top if n["type"] == "turn"]
    recent = {n["id"] for n in turns[-KEEP_OPEN:]}
    body = []
    omitted = bundle.get("omitted_turns", 0)
    if omitted:
        body.append(
            f'<div class="nba-note">{escape_html(plural(omitted, "earlier turn"))} show only their heads here: '
            "the live widget and <code>%agent transcript</code> have them in full</div>"
        )
    for n in top:
        if n["type"] == "turn":
            body.append(turn_html(n, kids, opened=n["id"] in recent, body=not n.get("omitted")))
        else:
            body.append(_node(n, kids))
    if not turns and not body:
        body.append('<div class="nba-empty">No turns yet.</div>')
    head = _head("Timeline", f"{bundle['summary']} · saved view", bundle["status"], bundle["status_text"])
    legend = legend_html(bundle["nodes"])
    return _wrap(
        "nba-timeline", f'{head}{legend}<div class="nba-scroll">{"".join(body)}</div>', seq=str(bundle["seq"])
    )


def live_turn_html(bundle: Mapping[str, Any]) -> str:
    """A one-turn bundle (a live cell): its headline, then the turn opened."""
    kids = _children(bundle["nodes"])
    top = kids.get(None, [])
    head = f'<div class="nba-head"><span class="nba-line">{escape_html(bundle["headline"] or "")}</span>'
    if not top:
        head += pill("queued", bundle["status_text"])
    head += "</div>"
    body = "".join(turn_html(n, kids, opened=True) if n["type"] == "turn" else _node(n, kids) for n in top)
    legend = legend_html(bundle["nodes"])
    return _wrap("nba-live", head + legend + (f'<div class="nba-scroll">{body}</div>' if body else ""))


def inbox_html(inbox: Mapping[str, Any]) -> str:
    """The inbox model (:func:`nbagent.views.inbox.inbox_model`) as static HTML, without buttons."""
    parts = []
    for queue in inbox["queues"]:
        items = "".join(
            _details("nba-inbox-item", message_row(m), _pre(m["text"]), id=m["id"], kind=m["kind"])
            for m in queue["items"]
        )
        name = f'<div class="nba-queue-name" title="{escape_html(queue["hint"])}">{escape_html(queue["name"])}</div>'
        if not items:
            parts.append(
                f'<div class="nba-queue nba-queue-empty" data-queue="{escape_html(queue["name"])}">{name}{_span("nba-muted", "empty")}</div>'
            )
        else:
            parts.append(
                f'<div class="nba-queue" data-queue="{escape_html(queue["name"])}">{name}{items}</div>'
            )
    head = _head("Inbox", f"{inbox['pending_text']} · saved view", inbox["status"], inbox["status_text"])
    return _wrap("nba-inbox", head + "".join(parts), pending=str(inbox["pending"]))
