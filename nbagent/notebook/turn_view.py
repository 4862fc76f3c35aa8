"""The live display of one turn as a pure function of its events: text and HTML renderings."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from nbagent.events import (
    ASSISTANT_CHUNK,
    ASSISTANT_MESSAGE,
    LLM_RETRY,
    STEP_START,
    TOOL_CALL,
    TOOL_RESULT,
    TURN_END,
    TURN_START,
    USER_MESSAGE,
    Event,
)
from nbagent.labels import (
    badge,
    block_text,
    context_label,
    first_line,
    is_typed_prompt,
    outcome_text,
)


@dataclass
class ToolView:
    call_id: str
    name: str
    arguments: str
    result: str | None = None
    is_error: bool = False


@dataclass
class StepView:
    number: int
    inputs: list[tuple[str, str, bool]] = field(default_factory=list)
    """``(badge, short label, is a typed prompt)`` per entered message (see ``labels.context_label``)."""
    text: str = ""
    interrupted: bool = False
    tools: list[ToolView] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class TurnView:
    """What one cell shows about the turn that took its message."""

    headline: str
    turn: int | None = None
    steps: list[StepView] = field(default_factory=list)
    outcome: str | None = None
    final: bool = False

    @property
    def answer(self) -> str:
        """The last non-empty assistant text of the turn."""
        for step in reversed(self.steps):
            if step.text.strip():
                return step.text
        return ""


def fold_turn(events: Iterable[Event], turn: int, headline: str) -> TurnView:
    """Fold the events of ``turn`` (others are skipped) into a :class:`TurnView`."""
    view = TurnView(headline=headline, turn=turn)
    current = -1
    step: StepView | None = None
    for ev in events:
        t, d = ev.type, ev.data
        if t == TURN_START:
            current = d["turn"]
            continue
        if current != turn:
            continue
        if t == STEP_START:
            step = StepView(d["step"])
            view.steps.append(step)
        elif step is None:
            if t == TURN_END:
                view.outcome, view.final = outcome_text(d["reason"]), True
            continue
        elif t == USER_MESSAGE:
            source = d.get("source") or {}
            label = context_label(source, block_text(d.get("content")))
            step.inputs.append((badge(source), label, is_typed_prompt(source)))
        elif t == ASSISTANT_CHUNK:
            chunk = d["chunk"]
            if chunk.get("type") == "text":
                step.text += chunk.get("text", "")
        elif t == ASSISTANT_MESSAGE:
            step.text = block_text(d["message"]["content"])
            step.interrupted = bool(d.get("interrupted"))
        elif t == TOOL_CALL:
            step.tools.append(ToolView(d["call_id"], d["name"], str(d.get("arguments", ""))))
        elif t == TOOL_RESULT:
            block = d["message"]["content"][0]
            call_id = block.get("tool_call_id")
            tool = next((x for x in step.tools if x.call_id == call_id), None)
            if tool is None:
                tool = ToolView(str(call_id), "?", "")
                step.tools.append(tool)
            tool.result = block_text(block.get("content")) or json.dumps(block.get("content"))
            tool.is_error = bool(block.get("is_error"))
        elif t == LLM_RETRY:
            failure = d.get("failure") or {}
            step.notes.append(
                f"retry {d.get('attempt')} after {failure.get('code')} in {d.get('delay_ms')} ms"
            )
        elif t == TURN_END:
            view.outcome, view.final = outcome_text(d["reason"]), True
    return view


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_text(view: TurnView) -> str:
    """A plain-text rendering (what ``text/plain`` consumers and tests read)."""
    lines = [view.headline]
    for step in view.steps:
        lines.append(f"step {step.number}")
        for label, line, _typed in step.inputs:
            lines.append(f"  ← [{label}] {line}")
        for note in step.notes:
            lines.append(f"  … {note}")
        if step.text:
            lines.append("  assistant:" + (" (interrupted)" if step.interrupted else ""))
            lines.extend(f"    {x}" for x in step.text.splitlines())
        for tool in step.tools:
            lines.append(f"  ⚙ {tool.name}({_short(tool.arguments, 200)})")
            if tool.result is None:
                lines.append("    … running")
            else:
                mark = "✗" if tool.is_error else "→"
                lines.append(f"    {mark} {_short(first_line(tool.result, 400), 400)}")
    if view.outcome is not None:
        lines.append(f"turn {view.turn}: {view.outcome}")
    return "\n".join(lines)


_CSS = (
    "font-family:var(--jp-code-font-family,monospace);font-size:12px;border-left:3px solid "
    "var(--jp-brand-color1,#1976d2);padding:2px 8px;margin:2px 0"
)
_BADGE = "border-radius:3px;padding:0 4px;margin-right:4px;font-size:11px;"
_TYPED = _BADGE + "background:#1976d2;color:white"
_CONTEXT = _BADGE + "background:#e0e0e0;color:#333"


def render_html(view: TurnView) -> str:
    """An HTML rendering for notebook front ends (all model and user text escaped)."""
    e = html.escape
    parts = [f'<div class="nbagent-turn" style="{_CSS}"><div><b>{e(view.headline)}</b></div>']
    for step in view.steps:
        parts.append(f'<div style="margin-top:4px;color:#666">step {step.number}</div>')
        for label, line, typed in step.inputs:
            style = _TYPED if typed else _CONTEXT
            parts.append(f'<div><span style="{style}">{e(label)}</span>{e(line)}</div>')
        for note in step.notes:
            parts.append(f'<div style="color:#a60">… {e(note)}</div>')
        if step.text:
            cut = " <i>(interrupted)</i>" if step.interrupted else ""
            parts.append(f'<pre style="white-space:pre-wrap;margin:2px 0">{e(step.text)}</pre>{cut}')
        for tool in step.tools:
            parts.append(f"<div>⚙ <b>{e(tool.name)}</b>({e(_short(tool.arguments, 200))})</div>")
            if tool.result is None:
                parts.append('<div style="margin-left:16px;color:#666">… running</div>')
            else:
                color = "#c62828" if tool.is_error else "#2e7d32"
                body = e(_short(tool.result, 2000))
                parts.append(
                    f'<pre style="margin:0 0 0 16px;color:{color};white-space:pre-wrap">{body}</pre>'
                )
    if view.outcome is not None:
        parts.append(f"<div><b>turn {view.turn}: {e(view.outcome)}</b></div>")
    parts.append("</div>")
    return "".join(parts)


def bundle(view: TurnView) -> dict[str, Any]:
    """The MIME bundle for ``display``/``update``."""
    return {"text/plain": render_text(view), "text/html": render_html(view)}
