"""What the model saw, side by side (SPEC §11.3): two turns aligned step by step.

:func:`turn_diff` builds the view model from two logs; :func:`diff_markdown` and :func:`diff_text`
paint it (data escaped). Each step holds the full request on each side: user-role messages are
matched by id, answers and tool results (new ids in a replay) by step, role and content. A message
is ``moved`` when the other side has its id in another step, or when it is out of the relative
order of the messages both sides share in that step (an insertion before it is not a move).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from typing import Literal

from nbagent.log.events import (
    AssistantMessageEvent,
    Event,
    StepStart,
    ToolResultEvent,
    TurnEnd,
    TurnStart,
    UserMessageEvent,
    parse_event,
)
from nbagent.log.messages import Message, message_text
from nbagent.views.labels import describe_message
from nbagent.views.schema import (
    DiffMark,
    DiffModel,
    DiffRow,
    DiffSide,
    DiffSideName,
    DiffStep,
    DiffSymbol,
    DiffTurnRef,
)
from nbagent.views.text import clip

Mark = DiffMark
SYMBOL: dict[Mark, DiffSymbol] = {"same": "=", "added": "+", "removed": "-", "moved": "~"}


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
    carried: bool = False
    """The same side's previous step's request already held it (history the step repeats)."""


@dataclass(frozen=True)
class Answer:
    """A step's answer: its text and its tool calls (``name(arguments)``); ``error`` when the step
    started and its request failed (``AUTH: invalid key``)."""

    text: str
    tool_calls: tuple[str, ...]
    error: str = ""


DiffOp = tuple[Literal["=", "+", "-"], str]


@dataclass(frozen=True)
class StepDiff:
    step: int
    a: tuple[DiffMessage, ...]
    """Side a's request (empty when a has no such step)."""
    b: tuple[DiffMessage, ...]
    answer_a: Answer | None
    answer_b: Answer | None
    answer_changed: bool
    answer_diff: tuple[DiffOp, ...] = ()
    """Word by word from a's answer text to b's (``=`` kept, ``-`` only in a, ``+`` only in b), when
    the answer changed and both have text."""


@dataclass(frozen=True)
class TurnDiff:
    session_a: str
    turn_a: int
    session_b: str
    turn_b: int
    steps: tuple[StepDiff, ...]

    @property
    def identical(self) -> bool:
        """Both turns sent the same requests and got the same answers."""
        return all(
            not s.answer_changed and len(s.a) == len(s.b) and all(m.mark == "same" for m in (*s.a, *s.b))
            for s in self.steps
        )


@dataclass
class _Step:
    request: list[Message]
    answer: Answer | None = None


def turn_numbers(events: Iterable[Event]) -> list[int]:
    """The turns a log has opened, in order."""
    return [r.turn for r in map(parse_event, events) if isinstance(r, TurnStart)]


def turn_steps(events: Iterable[Event], turn: int) -> list[_Step]:
    """The requests (the history at dispatch) and answers of each step of ``turn``; a step whose
    request failed has an answer with only its ``error``."""
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
            _failed_step(steps, record)
            break
    return steps


def _failed_step(steps: list[_Step], end: TurnEnd) -> None:
    """A turn that ended in an error before its last step answered: that step's answer is the error."""
    if steps and steps[-1].answer is None and end.error is not None:
        code, message = end.error.code, end.error.message
        steps[-1].answer = Answer("", (), f"{code}: {message}" if code else str(message))


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
    """Align turn ``turn_a`` of one log with turn ``turn_b`` of another, step by step; a turn a
    side does not have raises ``ValueError`` naming the turns it has."""
    for events, turn, name in ((events_a, turn_a, names[0]), (events_b, turn_b, names[1])):
        have = turn_numbers(events)
        if turn not in have:
            listed = ", ".join(map(str, have)) if have else "none yet"
            raise ValueError(f"session {name[:8]} has no turn {turn} (its turns: {listed})")
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
        carried_a = _carried(kai, ka[i - 1] if 0 < i <= len(a) else [])
        carried_b = _carried(kbi, kb[i - 1] if 0 < i <= len(b) else [])
        # A step on one side only: its new messages added or removed, except those the other side
        # first holds in another step: moved, on both sides (SPEC §11.3). History it carries that
        # the other side's last request also held stays the same.
        alone_a = (carried_a, kb[-1] if kb else []) if i >= len(b) else None
        alone_b = (carried_b, ka[-1] if ka else []) if i >= len(a) else None
        marks_a = _marks(kai, kbi, first_a, first_b, "removed", alone=alone_a)
        marks_b = _marks(kbi, kai, first_b, first_a, "added", alone=alone_b)
        ans_a = a[i].answer if i < len(a) else None
        ans_b = b[i].answer if i < len(b) else None
        changed = ans_a != ans_b
        out.append(
            StepDiff(
                i + 1,
                tuple(_row(m, k, c, described) for m, k, c in zip(sa, marks_a, carried_a)),
                tuple(_row(m, k, c, described) for m, k, c in zip(sb, marks_b, carried_b)),
                ans_a,
                ans_b,
                changed,
                answer_words(ans_a.text, ans_b.text) if changed and ans_a and ans_b else (),
            )
        )
    return TurnDiff(names[0], turn_a, names[1], turn_b, tuple(out))


def _carried(request: list[Key], previous: list[Key]) -> list[bool]:
    """Which messages of ``request`` the previous request of the same side already held."""
    left = Counter(previous)
    out = []
    for key in request:
        out.append(left[key] > 0)
        left[key] -= 1
    return out


_WORDS = re.compile(r"\s+|[^\s]+")


def answer_words(a: str, b: str) -> tuple[DiffOp, ...]:
    """A word-level diff of two answer texts (``()`` unless both have text); whitespace stays with
    the words around it, so joining the ``=`` and ``-`` parts gives ``a`` back, ``=`` and ``+`` ``b``."""
    if not a.strip() or not b.strip():
        return ()
    wa, wb = _WORDS.findall(a), _WORDS.findall(b)
    ops: list[DiffOp] = []

    def put(op: Literal["=", "+", "-"], words: list[str]) -> None:
        if not words:
            return
        if ops and ops[-1][0] == op:
            ops[-1] = (op, ops[-1][1] + "".join(words))
        else:
            ops.append((op, "".join(words)))

    for tag, i1, i2, j1, j2 in SequenceMatcher(a=wa, b=wb, autojunk=False).get_opcodes():
        if tag == "equal":
            put("=", wa[i1:i2])
        else:
            put("-", wa[i1:i2])
            put("+", wb[j1:j2])
    return tuple(ops)


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
    mine: list[Key],
    theirs: list[Key],
    first_mine: dict[Key, int],
    first_theirs: dict[Key, int],
    unmatched: Mark,
    *,
    alone: tuple[list[bool], list[Key]] | None,
) -> list[Mark]:
    if alone is not None:  # the other side has no such step: (my carried flags, their last request)
        carried, their_last = alone
        left = Counter(their_last)
        out: list[Mark] = []
        for k, held in zip(mine, carried):
            if k[0] and k in first_theirs and first_theirs[k] != first_mine.get(k):
                out.append("moved")
            elif held and left[k] > 0:
                left[k] -= 1
                out.append("same")
            else:
                out.append(unmatched)
        return out
    their_ids = {k for k in theirs if k[0]}
    their_content = Counter(k for k in theirs if not k[0])
    shared = [k for k in mine if k in their_ids]
    shared_set = set(shared)
    their_order = [k for k in theirs if k in shared_set]
    matcher = SequenceMatcher(a=shared, b=their_order, autojunk=False)
    in_order = {shared[blk.a + j] for blk in matcher.get_matching_blocks() for j in range(blk.size)}
    out = []
    for key in mine:
        if not key[0]:
            out.append("same" if their_content[key] > 0 else unmatched)
            their_content[key] -= 1
        elif key in their_ids:
            moved = first_mine.get(key) != first_theirs.get(key) or key not in in_order
            out.append("moved" if moved else "same")
        else:
            out.append("moved" if key in first_theirs else unmatched)
    return out


def _row(m: Message, mark: Mark, carried: bool, described: dict[int, DiffMessage]) -> DiffMessage:
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
    return row if mark == "same" and not carried else replace(row, mark=mark, carried=carried)


# -- the words every painting shares ----------------------------------------------------------------


def answer_line(answer: Answer | None) -> str:
    """A step's answer in one line: its text's first line and its calls, the failure of a step that
    started and failed, or ``(no such step)``."""
    if answer is None:
        return "(no such step)"
    if answer.error:
        return f"(the step failed: {clip(answer.error, 100)})"
    calls = f" → {', '.join(answer.tool_calls)}" if answer.tool_calls else ""
    return clip(answer.text.splitlines()[0] if answer.text.strip() else "(no text)", 100) + calls


def carried_text(rows: Sequence[DiffMessage], step: int) -> str:
    """The fold line of a step's carried history (``7 messages carried from step 1 · 2 differ``);
    empty when the step carries nothing."""
    carried = [m for m in rows if m.carried]
    if not carried:
        return ""
    differ = sum(m.mark != "same" for m in carried)
    n = len(carried)
    return f"{n} message{'s' if n != 1 else ''} carried from step {step - 1}" + (
        f" · {differ} differ" if differ else ""
    )


def identical_text(d: TurnDiff) -> str:
    """The one line that says two turns are the same."""
    n = len(d.steps)
    return (
        f"turn {d.turn_a} of {d.session_a[:8]} and turn {d.turn_b} of {d.session_b[:8]} are identical: "
        f"{n} step{'s' if n != 1 else ''}, the same requests and the same answers"
    )


# -- the view model as JSON (what the browser's painter paints: labextension/src/widgets/painter.js) -


def _first_steps_by_id(steps: Sequence[StepDiff], side: str) -> dict[str, int]:
    first: dict[str, int] = {}
    for s in steps:
        for m in s.a if side == "a" else s.b:
            first.setdefault(m.id, s.step)
    return first


def _row_json(m: DiffMessage, step: int, other: str, there: dict[str, int]) -> DiffRow:
    mark_text: str = m.mark
    if m.mark == "moved":
        elsewhere = there.get(m.id)
        mark_text = (
            f"moved: step {elsewhere} in {other}"
            if elsewhere is not None and elsewhere != step
            else f"moved: another place in step {step} of {other}"
        )
    return DiffRow(id=m.id, role=m.role, kind=m.source, badge=m.badge or m.source, label=m.label,
                   first_line=m.first_line, tokens_text=f"≈{m.tokens:,} tok", mark=m.mark,
                   symbol=SYMBOL[m.mark], mark_text=mark_text, carried=m.carried)  # fmt: skip


DIFF_MIME = "application/vnd.nbagent.diff+json"
"""The MIME type of a saved diff view model (what the lab extension's diff renderer paints)."""


def _sides(
    s: StepDiff,
) -> tuple[tuple[DiffSideName, DiffSideName, tuple[DiffMessage, ...], Answer | None], ...]:
    """Each side of a step: its name, the other side's, its request and its answer."""
    return (("a", "b", s.a, s.answer_a), ("b", "a", s.b, s.answer_b))


def diff_json(d: TurnDiff) -> DiffModel:
    """The diff as the browser paints it: every word ready-made (docs/timeline-json.md's rule)."""
    first = {"a": _first_steps_by_id(d.steps, "a"), "b": _first_steps_by_id(d.steps, "b")}
    steps: list[DiffStep] = []
    for s in d.steps:
        sides: list[DiffSide] = []
        for side, other, rows, answer in _sides(s):
            sides.append(DiffSide(
                side=side,
                missing=answer is None and not rows,
                rows=[_row_json(m, s.step, other, first[other]) for m in rows],
                carried_count=sum(m.carried for m in rows),
                carried_text=carried_text(rows, s.step),
                answer_text=answer_line(answer),
                failed=bool(answer is not None and answer.error),
            ))  # fmt: skip
        counts = Counter(m.mark for m in (*s.a, *s.b))
        steps.append(DiffStep(
            step=s.step,
            changed=s.answer_changed,
            answer_changed=s.answer_changed,
            answer_diff=[list(op) for op in s.answer_diff],
            changed_text="the answer changed" if s.answer_changed else "same answer",
            marks_text=" · ".join(f"{counts[k]} {k}" for k in ("added", "removed", "moved") if counts[k]),
            sides=sides,
        ))  # fmt: skip
    changed = sum(s.answer_changed for s in d.steps)
    return DiffModel(
        version=1,
        a=DiffTurnRef(session=d.session_a, turn=d.turn_a, title=f"a · turn {d.turn_a} of {d.session_a[:8]}"),
        b=DiffTurnRef(session=d.session_b, turn=d.turn_b, title=f"b · turn {d.turn_b} of {d.session_b[:8]}"),
        summary=f"{len(d.steps)} step{'s' if len(d.steps) != 1 else ''} · "
        f"{changed} answer{'s' if changed != 1 else ''} changed",
        identical=d.identical,
        identical_text=identical_text(d) if d.identical else "",
        legend=[[SYMBOL[k], k] for k in ("same", "added", "removed", "moved")],
        steps=steps,
    )
