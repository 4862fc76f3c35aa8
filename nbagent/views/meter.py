"""The context meter's part of the view model: tokens per request by source, usage and cost (SPEC §12).

The timeline fold feeds :class:`UsageTally` with every ``request/estimate`` and every answer's
usage; every display (the bundle, the live cell, ``%agent status``, ``%agent context``, the Markdown
transcript) reads the same numbers from it. Cost is worked out here, when a view is drawn, from the
maintained price table (:mod:`nbagent.usage`): it is never stored, and unknown for unknown models.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from nbagent._json import thaw
from nbagent.core.estimate import CHARS, TokenCounter, counter_for
from nbagent.log.events import AssistantMessageEvent, RequestEstimate
from nbagent.views.schema import BarPart, EstimateFields, TokenEstimate, UsageSummary

KIND_ORDER = ("user", "cell", "dataframe", "variable", "error", "session-reference", "plugin", "notebook",
              "tool", "assistant", "system", "tools")  # fmt: skip
"""The order of source kinds in a bar and a breakdown (unknown kinds follow, by size)."""


def tokens_text(n: int) -> str:
    return f"{n:,} token{'' if n == 1 else 's'}"


def share_text(part: int, whole: int) -> str:
    return f"{part * 100 / whole:.0f}%" if whole else "0%"


def ordered(by_source: Mapping[str, int]) -> list[tuple[str, int]]:
    """``by_source`` as ``(kind, tokens)`` pairs: the known kinds in :data:`KIND_ORDER`, then the rest."""
    known = [(k, by_source[k]) for k in KIND_ORDER if by_source.get(k)]
    rest = sorted(((k, v) for k, v in by_source.items() if k not in KIND_ORDER and v), key=lambda kv: -kv[1])
    return known + rest


def bar(by_source: Mapping[str, int]) -> list[BarPart]:
    """The stacked bar of one request: ``[{kind, tokens, share, text}]`` (shares of the total, 0–1)."""
    total = sum(by_source.values())
    return [
        BarPart(kind=k, tokens=v, share=v / total if total else 0.0, text=f"{k}: {tokens_text(v)}")
        for k, v in ordered(by_source)
    ]


def kind_colour(kind: str) -> str:
    """The CSS colour of a source kind: the badge's variable (typed prompts take the followup colour;
    other kinds, system and tools a neutral one), so the bar reads like the badges in both themes."""
    name = "followup" if kind == "user" else kind
    return (
        f"var(--nba-{name}, var(--nba-neutral))" if name.replace("-", "").isalpha() else "var(--nba-neutral)"
    )


LEGEND_WORDS = {"user": "followup · steer"}
"""A kind's word in the legend where it differs from the kind (typed prompts share one colour)."""


def legend_kinds(nodes: Sequence[Mapping[str, Any]]) -> list[str]:
    """The source kinds the steps' bars of ``nodes`` hold, in :data:`KIND_ORDER` (others by name)."""
    kinds = {str(p["kind"]) for n in nodes if n.get("type") == "step" for p in n.get("bar") or ()}
    return [k for k in KIND_ORDER if k in kinds] + sorted(kinds - set(KIND_ORDER))


def legend_html(nodes: Sequence[Mapping[str, Any]]) -> str:
    """The bars' colour key, once per timeline (painter.js's ``meterLegend`` paints the same):
    each kind the bars hold, its swatch and its word; ``""`` when no step has a bar yet."""
    from nbagent.views.escape import escape_html

    kinds = legend_kinds(nodes)
    if not kinds:
        return ""
    items = "".join(
        f'<span class="nba-legend-item" data-part="{escape_html(k)}"><span class="nba-swatch" '
        f'style="background:{kind_colour(k)}"></span>{escape_html(LEGEND_WORDS.get(k, k))}</span>'
        for k in kinds
    )
    return f'<div class="nba-meter-legend"><span class="nba-muted">tokens in, by source:</span>{items}</div>'


def bar_html(node: Mapping[str, Any]) -> str:
    """A step's stacked bar by source kind for the static HTML: coloured parts (their numbers in a
    tooltip) and the total in words; ``""`` for a step without an estimate yet."""
    from nbagent.views.escape import escape_html

    parts = node.get("bar")
    if not parts:
        return ""
    spans = "".join(
        f'<span data-part="{escape_html(p["kind"])}" title="{escape_html(p["text"])}" '
        f'style="flex-grow:{p["share"]:.4f};background:{kind_colour(p["kind"])}"></span>'
        for p in parts
    )
    title = escape_html(" · ".join(p["text"] for p in parts))
    return (
        f'<span class="nba-meter" title="{title}"><span class="nba-meter-bar">'
        f'{spans}</span><span class="nba-muted">{escape_html(node.get("tokens_text", ""))}</span></span>'
    )


def window_text(total: int, window: int | None) -> str:
    return f" · {share_text(total, window)} of the {window:,}-token window" if window else ""


def estimate_fields(ev: RequestEstimate) -> EstimateFields:
    """What a step node shows of its request's estimate (docs/timeline-json.md, ``step.tokens``)."""
    by_source = {str(k): int(v) for k, v in ev.by_source.items()}
    return EstimateFields(
        tokens=TokenEstimate(total=ev.total, by_source=by_source, counter=ev.counter, window=ev.window),
        tokens_text=f"≈{tokens_text(ev.total)} in{window_text(ev.total, ev.window)}",
        bar=bar(by_source),
    )


def warning_text(warning: Mapping[str, Any]) -> str:
    """One line for a ``request/estimate`` warning, naming the three largest messages."""
    largest = ", ".join(
        f"{item.get('source')}{' ' + str(item['label']) if item.get('label') else ''} "
        f"({tokens_text(int(item.get('tokens') or 0))})"
        for item in warning.get("largest") or ()
        if isinstance(item, Mapping)
    )
    estimate, window = int(warning.get("estimate") or 0), int(warning.get("window") or 0)
    return (
        f"context nearly full: this request is ≈{tokens_text(estimate)}, {share_text(estimate, window)} "
        f"of the {window:,}-token window; largest: {largest}"
    )


def counter_from_model_name(name: str) -> TokenCounter:
    """The counter a ``request/header`` model name (``openai:gpt-4o``) is measured with."""
    provider, _, model = name.partition(":")
    return counter_for(provider, model.split("@", 1)[0]) if model else CHARS


@dataclass
class UsageTally:
    """Tokens and requests folded from the log: estimates, provider usage, models used."""

    requests: int = 0
    estimated: int = 0
    """The sum of every request's estimate (what was sent, as counted before sending)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    last: RequestEstimate | None = None
    per_model: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    offline: bool = False
    """Some answer came from an offline model (echo), which reports no usage and costs nothing."""

    def add_estimate(self, ev: RequestEstimate) -> None:
        self.requests += 1
        self.estimated += ev.total
        self.last = ev

    def add_answer(self, ev: AssistantMessageEvent) -> None:
        usage = ev.usage
        source = ev.message.source
        if not usage:
            from nbagent.usage import NOT_PRICED

            self.offline = self.offline or str(source.get("provider") or "") in NOT_PRICED - {""}
            return
        key = (str(source.get("provider") or ""), str(source.get("model") or ""))
        counts = self.per_model.setdefault(
            key, {"input_tokens": 0, "output_tokens": 0, "cached_input_tokens": 0}
        )
        for name in counts:
            value = int(usage.get(name) or 0)  # type: ignore[call-overload]
            counts[name] += value
            setattr(self, name, getattr(self, name) + value)

    def cost(self) -> tuple[Decimal | None, list[str]]:
        """The cost of every answer with usage, and the models the price table does not know."""
        from nbagent.usage import NOT_PRICED, cost

        total: Decimal | None = None
        unknown = []
        for (provider, model), counts in self.per_model.items():
            if provider in NOT_PRICED:  # nbagent's offline models (echo, scripted) cost nothing
                continue
            amount = cost(provider, model, counts)
            if amount is None:
                unknown.append(f"{provider}:{model}" if provider else model)
            else:
                total = (total or Decimal(0)) + amount
        return total, unknown

    def summary(self) -> UsageSummary:
        """The session's totals, with ready-made words (the bundle's ``usage``)."""
        from nbagent.usage import NOT_PRICED, cost_text

        amount, unknown = self.cost()
        text = cost_text(amount)
        if unknown and amount is not None:
            text += f" + unknown ({', '.join(unknown)})"
        elif unknown:
            text += f" ({', '.join(unknown)} not in the price table)"
        elif self.per_model and all(p in NOT_PRICED for p, _ in self.per_model):
            text = "none (offline model)"
        last = self.last
        return UsageSummary(
            requests=self.requests,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_input_tokens=self.cached_input_tokens,
            cost=None if amount is None else str(amount),
            estimated_tokens=self.estimated,
            cost_text=text if self.per_model else self._no_usage_cost(),
            last_request=None if last is None else estimate_fields(last)["tokens"],
            text=self.line(text if self.per_model else self._no_usage_cost()),
        )

    def _no_usage_cost(self) -> str:
        return "none" if self.offline else "unknown"

    def line(self, cost: str) -> str:
        """``2 requests · ≈446 tokens sent · 400 in (128 cached) · 12 out as reported · cost $0.0012 · …``"""
        cached = f" ({self.cached_input_tokens:,} cached)" if self.cached_input_tokens else ""
        reported = (
            f"{self.input_tokens:,} in{cached} · {self.output_tokens:,} out as reported"
            if self.per_model
            else "no usage (offline model)"
            if self.offline
            else "no usage reported"
        )
        last = self.last
        last_text = (
            f" · last request ≈{tokens_text(last.total)}{window_text(last.total, last.window)}"
            if last
            else ""
        )
        requests = f"{self.requests} request{'' if self.requests == 1 else 's'}"
        return f"{requests} · ≈{tokens_text(self.estimated)} sent · {reported} · cost {cost}{last_text}"


COUNTER_WORDS = {
    "chars": "estimated: a token per 4 ASCII characters or per other character; the model's tokenizer may differ",
    "tiktoken": "counted with the model's tokenizer (tiktoken)",
}


def counter_text(counter: str) -> str:
    """What the figures of a breakdown were measured with, in words (``chars`` means the estimate)."""
    return COUNTER_WORDS.get(counter, f"counted with {counter}")


@dataclass(frozen=True)
class ContextItem:
    """One message of the next request: where it is (history or a queue), its kind, label, tokens."""

    where: str
    kind: str
    label: str
    tokens: int


@dataclass(frozen=True)
class ContextBreakdown:
    """``%agent context``: the next request as it stands (history, the pending inbox, system, tools)."""

    total: int
    by_source: dict[str, int]
    counter: str
    window: int | None
    items: Sequence[ContextItem]

    def lines(self, largest: int = 5) -> list[str]:
        out = [
            f"next request ≈{tokens_text(self.total)} ({counter_text(self.counter)})"
            f"{window_text(self.total, self.window)}"
        ]
        for kind, tokens in ordered(self.by_source):
            out.append(f"  {kind:<18} {tokens:>10,}  {share_text(tokens, self.total):>4}")
        top = sorted(self.items, key=lambda i: -i.tokens)[:largest]
        if top:
            out.append("largest:")
            out += [
                f"  {i.tokens:>10,}  {i.kind}{' · ' + i.label if i.label else ''} ({i.where})" for i in top
            ]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "by_source": dict(self.by_source),
            "counter": self.counter,
            "window": self.window,
            "items": [thaw(i.__dict__) for i in self.items],
        }


def context_breakdown(agent: Any) -> ContextBreakdown:
    """The next request of ``agent`` as it stands: its history, then every pending message (both
    queues), the system prompt and the tools, counted as its ``request/estimate`` will count them."""
    from nbagent.core.estimate import context_window, header_tokens, measure, model_counter
    from nbagent.models.base import model_provider
    from nbagent.usage import table_window

    driver = agent.driver
    model = agent.model
    counter = model_counter(model)
    items: list[ContextItem] = []
    from nbagent.core.projections import record_message

    def history(records: list[Any]) -> list[Any]:  # what is committed, then what is staged
        return [*driver.history(), *(m for r in records if (m := record_message(r)) is not None)]

    sources = [("history", driver.journal.with_uncommitted(history))]
    sources += [("next-step", agent.inbox.next_step), ("next-turn", agent.inbox.next_turn)]
    for where, messages in sources:
        for message in messages:
            item = measure(message, counter)
            items.append(ContextItem(where, item.kind, item.label, item.tokens))
    by_source: dict[str, int] = {}
    for entry in items:
        by_source[entry.kind] = by_source.get(entry.kind, 0) + entry.tokens
    system, tools = header_tokens(agent.system, agent.tool_schemas, counter)
    by_source.update({k: v for k, v in (("system", system), ("tools", tools)) if v})
    window = context_window(model, model_provider(model), table_window)
    return ContextBreakdown(sum(by_source.values()), by_source, counter.name, window, items)
