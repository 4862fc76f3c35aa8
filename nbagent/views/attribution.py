"""Which context mattered (SPEC §11.5), as view models and their paintings.

:class:`AttributionPlan` is what ``agent.attribution_plan(turn)`` shows before anything runs (the
items, the runs, the estimate); :class:`Attribution` is the result of ``agent.attribute`` or
``nbagent.attribution`` (each item's score, the control's noise). The running and the reading live in
``nbagent/forks/attribution.py``; this module only holds the records and paints them (text for
``%agent why``, HTML bars for its cell), every data string escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from nbagent.views.escape import escape_html
from nbagent.views.text import clip

BAR_WIDTH = 20
_ROW = "display:flex;gap:8px;align-items:center;font-family:var(--jp-code-font-family,monospace)"
_BAR = "display:inline-block;width:12em;height:.8em;background:rgba(128,128,128,.2)"
_FILL = "display:block;height:100%;background:var(--jp-brand-color1,#1976d2);"


@dataclass(frozen=True)
class PlanItem:
    """One piece of context the turn claimed, which a run leaves out."""

    message_id: str
    label: str
    """A short name (the source's label, else its badge word: ``note``, ``dataframe``)."""
    source: str
    """The source kind."""
    tokens: int
    """Its tokens, counted as the turn's ``request/estimate`` counts (SPEC §12)."""
    preview: str
    """Its first line, at most 80 characters."""
    step: int
    """The first step of the turn whose request held it (1-based)."""


@dataclass(frozen=True)
class RunEstimate:
    """What the runs would spend: requests, input tokens, and the cost when the price is known."""

    requests: int
    input_tokens: int
    cost: Decimal | None
    offline: bool
    """The model is one of nbagent's offline models (``echo``, scripted): nothing is spent."""

    @property
    def cost_text(self) -> str:
        if self.offline:
            return "nothing (offline model)"
        if self.cost is None:
            return "unknown (the model's price is not in the table)"
        return f"${self.cost:.4f}" if self.cost < 1 else f"${self.cost:.2f}"


@dataclass(frozen=True)
class AttributionPlan:
    """The runs ``agent.attribute(turn)`` would make; building it writes nothing."""

    session_id: str
    turn: int
    items: tuple[PlanItem, ...]
    """Every message turn ``turn`` claimed, except the followup or steer that opened it."""
    runs: int
    """One replay per item left out, plus one control replay with nothing left out."""
    estimate: RunEstimate
    model: str


@dataclass(frozen=True)
class AttributionItem:
    """How much the answer changed without one item."""

    message_id: str
    label: str
    source: str
    tokens: int
    score: float
    """``1 − difflib ratio`` between the parent's answer and the answer without this item, in [0, 1]."""
    answer_changed: bool
    fork: str
    """The session id of the run that left it out (open it, diff it)."""
    preview: str = ""
    """Its first line, at most 80 characters (two notes are told apart by it)."""


@dataclass(frozen=True)
class Attribution:
    """The items of a turn ranked by how much the answer moved without each, and the noise."""

    session_id: str
    turn: int
    items: tuple[AttributionItem, ...]
    """Highest score first; ties in delivery order."""
    noise: float
    """The control run's score (nothing left out): with a real model, scores at or below it say nothing."""
    control: str
    """The session id of the control run."""

    def meaningful(self, item: AttributionItem) -> bool:
        """The item moved the answer more than the control run moved by itself."""
        return item.score > self.noise


# -- paintings --------------------------------------------------------------------------------------


def plan_text(plan: AttributionPlan) -> str:
    """The plan as ``%agent why`` prints it before running."""
    n = len(plan.items)
    e = plan.estimate
    out = [
        f"Which context mattered in turn {plan.turn} of {plan.session_id[:8]}: {n} item{'s' if n != 1 else ''}, "
        f"{plan.runs} run{'s' if plan.runs != 1 else ''} ({n} left out one at a time + a control) with {plan.model}",
        f"estimate: {e.requests} requests, ≈{e.input_tokens:,} input tokens, cost {e.cost_text}",
    ]
    for i in plan.items:
        out.append(
            f"  · {i.label or i.source} (seen by step {i.step}, ≈{i.tokens:,} tok) {clip(i.preview, 60)!r}"
        )
    return "\n".join(out)


def _bar(score: float) -> str:
    filled = round(max(0.0, min(1.0, score)) * BAR_WIDTH)
    return "█" * filled + "·" * (BAR_WIDTH - filled)


def _name(i: AttributionItem) -> str:
    name = i.label or i.source
    return f"{name} {clip(i.preview, 40)!r}" if i.preview else name


def attribution_text(a: Attribution) -> str:
    """The ranked items as text bars; items at or below the noise are listed apart, unranked."""
    ranked = [i for i in a.items if a.meaningful(i)]
    rest = [i for i in a.items if not a.meaningful(i)]
    out = [
        f"Which context mattered in turn {a.turn} of {a.session_id[:8]} (noise: {a.noise:.3f}, the control run)"
    ]
    if not ranked:
        out.append("  no item moved the answer more than the noise")
    for n, i in enumerate(ranked, 1):
        changed = "answer changed" if i.answer_changed else "same answer"
        out.append(f"  {n}. {_bar(i.score)} {i.score:.3f}  {_name(i)} ({changed}; fork {i.fork[:8]})")
    if rest:
        names = ", ".join(f"{_name(i)} ({i.score:.3f})" for i in rest)
        out.append(f"  at or below the noise, says nothing: {names}")
    return "\n".join(out)


def attribution_html(a: Attribution) -> str:
    """The same as bars in HTML (the cell's output); every data string escaped."""
    h = escape_html
    ranked = [i for i in a.items if a.meaningful(i)]
    rest = [i for i in a.items if not a.meaningful(i)]
    rows = []
    for n, i in enumerate(ranked, 1):
        width = f"{max(0.0, min(1.0, i.score)) * 100:.1f}%"
        changed = "answer changed" if i.answer_changed else "same answer"
        rows.append(
            f'<div class="nba-why-row" data-fork="{h(i.fork)}" style="{_ROW}"><span>{n}.</span>'
            f'<span class="nba-why-label" style="min-width:12em">{h(_name(i))}</span>'
            f'<span class="nba-why-bar" style="{_BAR}"><span class="nba-why-fill" '
            f'style="{_FILL}width:{width}"></span></span>'
            f'<span class="nba-why-score">{i.score:.3f}</span>'
            f'<span class="nba-why-note" style="opacity:.7">{changed} · fork {h(i.fork[:8])}</span></div>'
        )
    if not ranked:
        rows.append('<div class="nba-why-none">no item moved the answer more than the noise</div>')
    if rest:
        names = ", ".join(f"{h(_name(i))} ({i.score:.3f})" for i in rest)
        rows.append(
            f'<div class="nba-why-noise" style="opacity:.7">at or below the noise, says nothing: {names}</div>'
        )
    head = (
        f'<div class="nba-why-head" style="font-weight:600;margin-bottom:4px">Which context mattered in turn {a.turn} of {h(a.session_id[:8])} · '
        f"noise {a.noise:.3f} (the control run)</div>"
    )
    return f'<div class="nbagent nba-why">{head}{"".join(rows)}</div>'


def attribution_json(a: Attribution) -> dict[str, Any]:
    """The result as plain JSON (for a page or a file)."""
    return {
        "session": a.session_id,
        "turn": a.turn,
        "noise": a.noise,
        "control": a.control,
        "items": [
            {**i.__dict__, "meaningful": a.meaningful(i)}  # the dataclass's fields, in order
            for i in a.items
        ],
    }
