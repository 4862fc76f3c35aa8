"""Static HTML snapshots of the widgets, for outputs viewed without a kernel (GitHub, nbviewer).

No script: turns and items are ``<details>`` elements, styled by the widgets' own stylesheet.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from html import escape
from importlib import resources
from typing import Any

from nbagent.widgets._describe import human_size
from nbagent.widgets.timeline import Node

MAX_TURNS = 50
MAX_TEXT = 20_000


@cache
def stylesheet() -> str:
    return resources.files("nbagent.widgets").joinpath("widgets.css").read_text(encoding="utf-8")


def _badge(kind: str, text: str | None = None, extra: str = "") -> str:
    cls = f"nba-badge {extra}".strip()
    return f'<code class="{cls}" data-kind="{escape(kind)}">{escape(text or kind)}</code>'


def _span(cls: str, text: str) -> str:
    return f'<span class="{cls}">{escape(text)}</span>'


def _cut(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return escape(text)
    return escape(text[:MAX_TEXT]) + escape(
        f"\n… ({len(text) - MAX_TEXT} more characters in the live widget)"
    )


def _wrap(kind: str, body: str) -> str:
    return f'<div class="nbagent-static"><style>{stylesheet()}</style><div class="nbagent {kind}">{body}</div></div>'


def _item(cls: str, row: str, detail: str, **data: str) -> str:
    attrs = "".join(f' data-{k}="{escape(v)}"' for k, v in data.items())
    return (
        f'<details class="nba-item {cls}"{attrs}><summary class="nba-row">{row}</summary>'
        f'<div class="nba-detail">{detail}</div></details>'
    )


def _node(n: Node, kids: Mapping[str | None, list[Node]]) -> str:
    t = n["type"]
    if t == "message":
        row = _badge(n["kind"], extra="nba-via" if n.get("via_tool") else "")
        if n.get("via_tool"):
            row += _span("nba-muted", f"via {n['via_tool']}")
        if n.get("label"):
            row += _span("nba-label", n["label"])
        row += _span("nba-line", n["first_line"]) + _span("nba-size", human_size(n["size"]))
        source = escape(json.dumps(n["source"], ensure_ascii=False))
        detail = f'<div class="nba-source">{source}</div><pre>{_cut(n["text"])}</pre>'
        return _item("nba-msg", row, detail, kind=n["kind"])
    if t == "assistant":
        row = _badge("assistant") + _span("nba-answer-text", n["text"][:300])
        detail = f"<pre>{_cut(n['text'])}</pre>"
        return _item("nba-answer", row, detail)
    if t == "tool":
        result = n["result"] if n["result"] is not None else "(running)"
        row = _badge("tool") + f"<b>{escape(n['name'])}</b>" + _span("nba-tool-args", n["arguments"][:200])
        row += _span("nba-muted", "→") + _span("nba-line", result.split("\n")[0][:200])
        detail = (
            f'<pre>{_cut(n["arguments"])}</pre><div class="nba-source">result</div><pre>{_cut(result)}</pre>'
        )
        return _item("nba-tool", row, detail)
    if t == "step":
        inner = "".join(_node(k, kids) for k in kids.get(n["id"], ()))
        return f'<div class="nba-step"><div class="nba-step-head">step {n["step"]}</div>{inner}</div>'
    if t == "turn":
        return _turn(n, kids)
    return f'<div class="nba-mark" data-mark="{escape(n.get("mark", ""))}">{escape(n.get("text", ""))}</div>'


def _turn(n: Node, kids: Mapping[str | None, list[Node]]) -> str:
    status = n["status"]
    head = f"<b>Turn {n['turn']}</b>" + _span("nba-line", n.get("title") or "")
    head += _span("nba-muted", f"{n['steps']} step{'' if n['steps'] == 1 else 's'}")
    head += f'<code class="nba-badge nba-status" data-status="{escape(status)}">{escape(status)}</code>'
    body = "".join(_node(k, kids) for k in kids.get(n["id"], ()))
    return (
        f'<details class="nba-turn" open data-status="{escape(status)}">'
        f'<summary class="nba-turn-head">{head}</summary><div class="nba-turn-body">{body}</div></details>'
    )


def timeline_html(snapshot: Mapping[str, Any]) -> str:
    """The timeline as static HTML: the last :data:`MAX_TURNS` turns, every item expandable."""
    kids: dict[str | None, list[Node]] = {}
    for n in snapshot["nodes"]:
        kids.setdefault(n.get("parent"), []).append(n)
    top = kids.get(None, [])
    turns = [n for n in top if n["type"] == "turn"]
    shown = top
    note = ""
    if len(turns) > MAX_TURNS:
        first = turns[-MAX_TURNS]["seq"]
        shown = [n for n in top if n["seq"] >= first]
        note = f'<div class="nba-mark">{len(turns) - MAX_TURNS} earlier turns are in the live widget</div>'
    head = (
        '<div class="nba-head"><span>Timeline</span>'
        + _span(
            "nba-muted",
            f"{len(turns)} turn{'' if len(turns) == 1 else 's'} · {snapshot['seq']} events · static snapshot",
        )
        + "</div>"
    )
    body = note + "".join(_node(n, kids) for n in shown)
    return _wrap("nba-timeline", f'{head}<div class="nba-scroll">{body}</div>')


def inbox_html(view: Mapping[str, Any]) -> str:
    """The inbox as static HTML (both queues, without buttons)."""
    parts = []
    for key, name in (("next_step", "next-step"), ("next_turn", "next-turn")):
        items = "".join(
            f'<li class="nba-inbox-item" data-kind="{escape(m["kind"])}">'
            + _badge(m["kind"])
            + (_span("nba-label", m["label"]) if m["label"] else "")
            + _span("nba-line", m["first_line"])
            + _span("nba-size", human_size(m["size"]))
            + "</li>"
            for m in view.get(key, ())
        )
        items = items or '<li class="nba-empty">empty</li>'
        parts.append(f'<div class="nba-queue"><div class="nba-queue-name">{name}</div><ul>{items}</ul></div>')
    pending = len(view.get("next_step", ())) + len(view.get("next_turn", ()))
    head = (
        f'<div class="nba-head"><span>Inbox</span>{_span("nba-muted", f"{pending} pending · static snapshot")}'
        "</div>"
    )
    return _wrap("nba-inbox", head + "".join(parts))
