"""What the model saw, side by side (SPEC §11.3): two turns aligned step by step.

:func:`turn_diff` builds the view model from two logs; :func:`diff_markdown` and :func:`diff_text`
paint it (data escaped). Each step holds the full request on each side: user-role messages are
matched by id, answers and tool results (new ids in a replay) by step, role and content. A message
is ``moved`` when the other side has its id in another step, or when it is out of the relative
order of the messages both sides share in that step (an insertion before it is not a move).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from typing import Literal

from nbagent.core.events import (
    AssistantMessageEvent,
    Event,
    StepStart,
    ToolResultEvent,
    TurnEnd,
    TurnStart,
    UserMessageEvent,
    parse_event,
)
from nbagent.core.messages import Message, message_text
from nbagent.views.escape import escape_markdown
from nbagent.views.labels import describe_message
from nbagent.views.text import clip

Mark = Literal["same", "added", "removed", "moved"]
SYMBOL = {"same": "=", "added": "+", "removed": "-", "moved": "~"}


@dataclass(frozen=True)
class DiffMessage:
    """One message of a request: what it is, and how it compares with the other side."""

    id: str
    role: str
    source: str
    label: str
    first_line: str
    tokens: int
    """A rough count: characters / 4, rounded up (no tokenizer is assumed)."""
    mark: Mark
    badge: str = ""
    """The badge's word, as the timeline shows it (``followup``, ``dataframe``…)."""


@dataclass(frozen=True)
class Answer:
    """A step's answer: its text and its tool calls (``name(arguments)``)."""

    text: str
    tool_calls: tuple[str, ...]


@dataclass(frozen=True)
class StepDiff:
    step: int
    a: tuple[DiffMessage, ...]
    """Side a's request (empty when a has no such step)."""
    b: tuple[DiffMessage, ...]
    answer_a: Answer | None
    answer_b: Answer | None
    answer_changed: bool


@dataclass(frozen=True)
class TurnDiff:
    session_a: str
    turn_a: int
    session_b: str
    turn_b: int
    steps: tuple[StepDiff, ...]


@dataclass
class _Step:
    request: list[Message]
    answer: Answer | None = None


def turn_steps(events: Iterable[Event], turn: int) -> list[_Step]:
    """The requests (the history at dispatch) and answers of each step of ``turn``."""
    history: list[Message] = []
    steps: list[_Step] = []
    inside = waiting = False
    for ev in events:
        record = parse_event(ev)
        if isinstance(record, TurnStart):
            inside = record.turn == turn
        if inside and isinstance(record, StepStart):
            steps.append(_Step([]))
            waiting = True
            continue
        if waiting and not isinstance(record, UserMessageEvent) and record.type != "request/estimate":
            steps[-1].request = list(history)  # the request: what was derived when the step began
            waiting = False
        if isinstance(record, UserMessageEvent | ToolResultEvent):
            history.append(record.message)
        elif isinstance(record, AssistantMessageEvent):
            if record.message.content:
                history.append(record.message)
            if inside and steps:
                steps[-1].answer = _answer(record.message if record.message.content else None)
        elif inside and isinstance(record, TurnEnd):
            break
    return steps


def _answer(message: Message | None) -> Answer:
    if message is None:
        return Answer("", ())
    calls = tuple(
        f"{b.get('name')}({b.get('arguments', '')})" for b in message.content if b.get("type") == "tool-call"
    )
    return Answer(message_text(message), calls)


def turn_diff(
    events_a: Sequence[Event], events_b: Sequence[Event], *, turn_a: int, turn_b: int, names: tuple[str, str]
) -> TurnDiff:
    """Align turn ``turn_a`` of one log with turn ``turn_b`` of another, step by step."""
    a, b = turn_steps(events_a, turn_a), turn_steps(events_b, turn_b)
    keys: dict[int, Key] = {}
    ka = [[_key(m, keys) for m in s.request] for s in a]
    kb = [[_key(m, keys) for m in s.request] for s in b]
    first_a, first_b = _first_steps(ka), _first_steps(kb)
    described: dict[int, DiffMessage] = {}
    out = []
    for i in range(max(len(a), len(b))):
        sa, sb = (a[i].request if i < len(a) else []), (b[i].request if i < len(b) else [])
        kai, kbi = (ka[i] if i < len(a) else []), (kb[i] if i < len(b) else [])
        # A step on one side only: all its messages added or removed (SPEC §11.3).
        marks_a = _marks(kai, kbi, first_a, first_b, "removed") if i < len(b) else ["removed"] * len(sa)
        marks_b = _marks(kbi, kai, first_b, first_a, "added") if i < len(a) else ["added"] * len(sb)
        ans_a = a[i].answer if i < len(a) else None
        ans_b = b[i].answer if i < len(b) else None
        out.append(
            StepDiff(
                i + 1,
                tuple(_row(m, k, described) for m, k in zip(sa, marks_a)),
                tuple(_row(m, k, described) for m, k in zip(sb, marks_b)),
                ans_a,
                ans_b,
                ans_a != ans_b,
            )
        )
    return TurnDiff(names[0], turn_a, names[1], turn_b, tuple(out))


Key = tuple[bool, str]
"""``(True, id)`` for a message matched by id (user-role, not a tool result), else ``(False, role
and content)``."""


def _key(m: Message, keys: dict[int, Key]) -> Key:
    key = keys.get(id(m))
    if key is None:
        by_id = m.role == "user" and m.source.get("kind") != "tool"
        key = keys[id(m)] = (True, m.id) if by_id else (False, m.role + repr(m.content))
    return key


def _first_steps(steps: list[list[Key]]) -> dict[Key, int]:
    """For each id-matched message, the step whose request first held it."""
    first: dict[Key, int] = {}
    for i, request in enumerate(steps):
        for key in request:
            if key[0]:
                first.setdefault(key, i)
    return first


def _marks(
    mine: list[Key], theirs: list[Key], first_mine: dict[Key, int], first_theirs: dict[Key, int], alone: Mark
) -> list[Mark]:
    their_ids = {k for k in theirs if k[0]}
    their_content = Counter(k for k in theirs if not k[0])
    shared = [k for k in mine if k in their_ids]
    shared_set = set(shared)
    their_order = [k for k in theirs if k in shared_set]
    matcher = SequenceMatcher(a=shared, b=their_order, autojunk=False)
    in_order = {shared[blk.a + j] for blk in matcher.get_matching_blocks() for j in range(blk.size)}
    out: list[Mark] = []
    for key in mine:
        if not key[0]:
            out.append("same" if their_content[key] > 0 else alone)
            their_content[key] -= 1
        elif key in their_ids:
            moved = first_mine.get(key) != first_theirs.get(key) or key not in in_order
            out.append("moved" if moved else "same")
        else:
            out.append("moved" if key in first_theirs else alone)
    return out


def _row(m: Message, mark: Mark, described: dict[int, DiffMessage]) -> DiffMessage:
    """The message's row; each message object (shared by every later request) is described once."""
    row = described.get(id(m))
    if row is None:
        label = describe_message(m)
        line = label.first_line
        if m.role == "assistant" and not message_text(m).strip():  # an answer that only calls tools
            line = "→ " + ", ".join(_answer(m).tool_calls)
        tokens = -(-len(label.text) // 4)
        row = DiffMessage(m.id, m.role, label.kind, label.label, line, tokens, "same", badge=label.badge)
        described[id(m)] = row
    return row if mark == "same" else replace(row, mark=mark)


# -- painting ---------------------------------------------------------------------------------------


def _line(m: DiffMessage, width: int = 72) -> str:
    what = f"{m.source}" + (f" {m.label}" if m.label else "")
    return f"{SYMBOL[m.mark]} {m.role:<9} [{what}] {clip(m.first_line, width)} ({m.tokens} tok)"


def _answer_line(answer: Answer | None) -> str:
    if answer is None:
        return "(no such step)"
    calls = f" → {', '.join(answer.tool_calls)}" if answer.tool_calls else ""
    return clip(answer.text.splitlines()[0] if answer.text.strip() else "(no text)", 100) + calls


def diff_text(d: TurnDiff) -> str:
    """Plain text for ``%agent diff``: each step's two requests, then the two answers."""
    out = [f"a = {d.session_a} turn {d.turn_a}   b = {d.session_b} turn {d.turn_b}",
           "marks: = same  + added  - removed  ~ moved"]  # fmt: skip
    for s in d.steps:
        out.append(f"step {s.step}" + ("  (answer changed)" if s.answer_changed else ""))
        for side, rows, answer in (("a", s.a, s.answer_a), ("b", s.b, s.answer_b)):
            out.append(f"  {side}:" + ("" if rows else " (no such step)"))
            out += [f"    {_line(m)}" for m in rows]
            out.append(f"  {side} answered: {_answer_line(answer)}")
    return "\n".join(out)


def diff_markdown(d: TurnDiff) -> str:
    """Markdown of the same model; every data string escaped."""
    e = escape_markdown
    out = [f"## Turn {d.turn_a} of {e(d.session_a)} (a) and turn {d.turn_b} of {e(d.session_b)} (b)", ""]
    for s in d.steps:
        out += [f"### Step {s.step}" + (" — the answer changed" if s.answer_changed else ""), ""]
        for side, rows, answer in (("a", s.a, s.answer_a), ("b", s.b, s.answer_b)):
            out += [f"**{side}**" + ("" if rows else ": no such step"), ""]
            out += [f"- `{SYMBOL[m.mark]}` {m.mark} · {e(m.role)} · {e(m.source)} · {e(m.first_line)}"
                    f" ({m.tokens} tokens)" for m in rows]  # fmt: skip
            out += ["", f"{side} answered: {e(_answer_line(answer))}", ""]
    return "\n".join(out)


# -- the view model as JSON (what the browser's painter paints: nbagent/widgets/painter.js) ----------

DIFF_MIME = "application/vnd.nbagent.diff+json"
MARK_WORDS = {"same": "same", "added": "added", "removed": "removed", "moved": "moved"}


def _first_steps_by_id(steps: Sequence[StepDiff], side: str) -> dict[str, int]:
    first: dict[str, int] = {}
    for s in steps:
        for m in s.a if side == "a" else s.b:
            first.setdefault(m.id, s.step)
    return first


def _row_json(m: DiffMessage, step: int, other: str, there: dict[str, int]) -> dict[str, object]:
    mark_text = m.mark
    if m.mark == "moved":
        elsewhere = there.get(m.id)
        mark_text = (
            f"moved: step {elsewhere} in {other}"
            if elsewhere is not None and elsewhere != step
            else f"moved: another place in step {step} of {other}"
        )
    return {"id": m.id, "role": m.role, "kind": m.source, "badge": m.badge or m.source, "label": m.label,
            "first_line": m.first_line, "tokens_text": f"≈{m.tokens:,} tok", "mark": m.mark,
            "symbol": SYMBOL[m.mark], "mark_text": mark_text}  # fmt: skip


DIFF_MIME = "application/vnd.nbagent.diff+json"
"""The MIME type of a saved diff view model (what the lab extension's diff renderer paints)."""


def diff_json(d: TurnDiff) -> dict[str, object]:
    """The diff as the browser paints it: every word ready-made (docs/timeline-json.md's rule)."""
    first = {"a": _first_steps_by_id(d.steps, "a"), "b": _first_steps_by_id(d.steps, "b")}
    steps = []
    for s in d.steps:
        sides = []
        for side, other, rows, answer in (("a", "b", s.a, s.answer_a), ("b", "a", s.b, s.answer_b)):
            sides.append({
                "side": side,
                "missing": answer is None and not rows,
                "rows": [_row_json(m, s.step, other, first[other]) for m in rows],
                "answer_text": _answer_line(answer),
            })  # fmt: skip
        counts = Counter(m.mark for m in (*s.a, *s.b))
        steps.append({
            "step": s.step,
            "changed": s.answer_changed,
            "changed_text": "the answer changed" if s.answer_changed else "same answer",
            "marks_text": " · ".join(f"{counts[k]} {k}" for k in ("added", "removed", "moved") if counts[k]),
            "sides": sides,
        })  # fmt: skip
    changed = sum(s.answer_changed for s in d.steps)
    return {
        "version": 1,
        "a": {"session": d.session_a, "turn": d.turn_a, "title": f"a · turn {d.turn_a} of {d.session_a[:8]}"},
        "b": {"session": d.session_b, "turn": d.turn_b, "title": f"b · turn {d.turn_b} of {d.session_b[:8]}"},
        "summary": f"{len(d.steps)} step{'s' if len(d.steps) != 1 else ''} · "
        f"{changed} answer{'s' if changed != 1 else ''} changed",
        "legend": [[SYMBOL[k], k] for k in ("same", "added", "removed", "moved")],
        "steps": steps,
    }
