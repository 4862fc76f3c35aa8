"""Helpers for ``benchmarks/run.py``: synthetic session histories, statistics, the result table.

The synthetic history mirrors what a real ``ScriptedModel`` turn writes (checked against a live run):
each turn is a followup splice, ``turn/start``, the claim, step 1 (user message, a tool call and its
result) and step 2 (a text answer), ``turn/end`` — 17 events, plus one ``request/header`` in the first
turn. Rows go straight into the file with ``SessionFile.write`` in big transactions.
"""

from __future__ import annotations

import math
import resource
import statistics
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

TOOL_SCHEMA: dict[str, Any] = {
    "name": "lookup",
    "description": "Look up a key in the notebook's namespace.",
    "parameters": {
        "additionalProperties": False,
        "properties": {"key": {"type": "string"}},
        "required": ["key"],
        "type": "object",
    },
}

PROMPT = "Summarize the columns of df_sales and tell me which region had the largest growth in Q3. "
TOOL_OUTPUT = ("region,q2,q3,growth\n" + "north,120,180,0.50\nsouth,200,210,0.05\n" * 4).strip()
ANSWER = (
    "The north region grew fastest in Q3: revenue rose from 120 to 180 (+50%), while the south "
    "region was almost flat (+5%). The dataframe has four columns (region, q2, q3, growth); "
    "growth is the relative change between the two quarters. "
) * 2
MODEL_SOURCE = {"kind": "model", "provider": "scripted", "model": "scripted"}


def _user(text: str) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "source": {"kind": "user"},
    }


def synth_turn(turn: int, *, header: bool) -> list[tuple[str, dict[str, Any], int | None]]:
    """One turn's events as ``(type, data, inbox_pending)`` (pending only on splices)."""
    prompt = _user(f"[{turn}] {PROMPT}")
    call_id = f"call_{turn}_1"
    args = '{"key": "df_sales"}'
    step1 = {"turn": turn, "step": 1}
    step2 = {"turn": turn, "step": 2}
    out: list[tuple[str, dict[str, Any], int | None]] = [
        ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [prompt]}, 1),
        ("turn/start", {"turn": turn}, None),
        ("agent/inbox/spliced", {"target": "next-turn", "start": 0, "removed_count": 1, "inserted": []}, 0),
        ("step/start", step1, None),
        ("user/message", prompt, None),
    ]
    if header:
        out.append(
            ("request/header", {"model": "scripted", "tools": [TOOL_SCHEMA], "reason": "initial"}, None)
        )
    call_chunk = {"type": "tool-call", "id": call_id, "name": "lookup", "arguments": args}
    out += [
        ("assistant/chunk", {**step1, "chunk": call_chunk}, None),
        ("assistant/chunk", {**step1, "chunk": {"type": "finish", "kind": "tool-calls"}}, None),
        (
            "assistant/message",
            {
                **step1,
                "message": {
                    "id": str(uuid.uuid4()),
                    "role": "assistant",
                    "content": [call_chunk],
                    "source": MODEL_SOURCE,
                },
            },
            None,
        ),
        ("tool/call", {**step1, "call_id": call_id, "name": "lookup", "arguments": args}, None),
        (
            "tool/result",
            {
                **step1,
                "message": {
                    "id": str(uuid.uuid4()),
                    "role": "user",
                    "content": [
                        {
                            "type": "tool-result",
                            "tool_call_id": call_id,
                            "content": [{"type": "text", "text": TOOL_OUTPUT}],
                            "is_error": False,
                        }
                    ],
                    "source": {"kind": "tool", "call_id": call_id},
                },
            },
            None,
        ),
        ("step/end", step1, None),
        ("step/start", step2, None),
        ("assistant/chunk", {**step2, "chunk": {"type": "text", "text": ANSWER}}, None),
        ("assistant/chunk", {**step2, "chunk": {"type": "finish", "kind": "stop"}}, None),
        (
            "assistant/message",
            {
                **step2,
                "message": {
                    "id": str(uuid.uuid4()),
                    "role": "assistant",
                    "content": [{"type": "text", "text": ANSWER}],
                    "source": MODEL_SOURCE,
                },
            },
            None,
        ),
        ("step/end", step2, None),
        ("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, None),
    ]
    return out


def synth_history(n_events: int) -> Iterator[tuple[str, dict[str, Any], int | None]]:
    """At least ``n_events`` events of whole turns (the log ends with a ``turn/end``)."""
    written = 0
    turn = 0
    while written < n_events:
        turn += 1
        events = synth_turn(turn, header=turn == 1)
        written += len(events)
        yield from events


def write_history(path: str, n_events: int, *, batch: int = 20_000) -> tuple[str, int]:
    """Create a session in ``path`` holding about ``n_events`` events; returns (id, event count)."""
    from nbagent import _json
    from nbagent.store.sqlite.store import SessionFile

    sid = uuid.uuid4().hex
    file = SessionFile(path)
    try:
        now = int(time.time() * 1000) - n_events
        file.write([], session=(sid, now, "bench", None, None, "scripted", "{}"))
        rows: list[tuple[Any, ...]] = []
        seq = 0
        for type_, data, pending in synth_history(n_events):
            rows.append((sid, seq, now + seq, type_, _json.dumps(data), pending))
            seq += 1
            if len(rows) >= batch:
                file.write(rows)
                rows = []
        if rows:
            file.write(rows)
    finally:
        file.close()
    return sid, seq


# -- statistics ---------------------------------------------------------------------------------------


def pct(samples: Sequence[float], q: float) -> float:
    """The ``q``-quantile (0..1) by nearest rank."""
    s = sorted(samples)
    if not s:
        return math.nan
    k = max(0, min(len(s) - 1, math.ceil(q * len(s)) - 1))
    return s[k]


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples) if samples else math.nan


# -- the table ---------------------------------------------------------------------------------------


@dataclass
class Row:
    metric: str
    value: float
    unit: str
    baseline: float | None = None
    target: str = ""
    ok: bool | None = None
    ratio: float | None = None

    def __post_init__(self) -> None:
        if self.ratio is None and self.baseline:
            self.ratio = self.value / self.baseline


def fmt(value: float | None, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if unit == "s":
        if value >= 1:
            return f"{value:.2f} s"
        if value >= 1e-3:
            return f"{value * 1e3:.2f} ms"
        return f"{value * 1e6:.0f} µs"
    if unit == "/s":
        return f"{value:,.0f}/s"
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "MB":
        return f"{value / 1e6:.1f} MB"
    return f"{value:g} {unit}".strip()


def table(rows: Sequence[Row]) -> str:
    head = ("metric", "value", "baseline", "ratio", "target", "met?")
    body = [
        (
            r.metric,
            fmt(r.value, r.unit),
            fmt(r.baseline, r.unit),
            "-" if r.ratio is None else f"{r.ratio:.2f}x",
            r.target or "-",
            {True: "yes", False: "NO", None: "-"}[r.ok],
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [line.format(*head), line.format(*("-" * w for w in widths))]
    out += [line.format(*b) for b in body]
    return "\n".join(out)


def process_cpu() -> float:
    """The process's CPU time so far, user and system, every thread (``getrusage``)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def count_writes(agent: Any) -> list[int]:
    """Count the transactions ``agent`` writes from now on (``[n]``, updated in place): every write
    of its store is one transaction, so this is the number of commits (and, with ``fsync``, syncs)."""
    store = agent.driver.journal.file
    real_write = store.write
    count = [0]

    def counting_write(*args: Any, **kwargs: Any) -> None:
        real_write(*args, **kwargs)
        count[0] += 1

    store.write = counting_write  # an instance attribute: nothing else changes
    return count
