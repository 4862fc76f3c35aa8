"""The turn diff painted in Python (SPEC §11.3): plain text for ``%agent diff``, Markdown for the
transcript and a notebook read without the lab extension, static HTML for any other page.

Each step folds the history it carries from its previous step into one line ("7 messages carried
from step 1 · 2 differ"): HTML and Markdown open it on a click (``<details>``); text lists only the
carried messages that differ under it. A changed answer shows its word-level diff; two identical
turns are said to be identical in one line. Every data string goes through ``views/escape.py``.
"""

from __future__ import annotations

from collections.abc import Sequence

from nbagent.views.diff import (
    SYMBOL,
    DiffMessage,
    StepDiff,
    TurnDiff,
    answer_line,
    carried_text,
    identical_text,
)
from nbagent.views.escape import escape_html, escape_markdown
from nbagent.views.text import clip

_OPS_TEXT = {"=": "{}", "-": "[-{}-]", "+": "{{+{}+}}"}


def _line(m: DiffMessage, width: int = 72) -> str:
    what = f"{m.source}" + (f" {m.label}" if m.label else "")
    return f"{SYMBOL[m.mark]} {m.role:<9} [{what}] {clip(m.first_line, width)} ({m.tokens} tok)"


def _words_text(s: StepDiff) -> str:
    return "".join(_OPS_TEXT[op].format(text) for op, text in s.answer_diff)


def diff_text(d: TurnDiff) -> str:
    """Plain text for ``%agent diff``: each step's two requests (carried history folded), then the
    two answers and, when they differ, their words (``[-removed-]``, ``{+added+}``)."""
    head = f"a = {d.session_a} turn {d.turn_a}   b = {d.session_b} turn {d.turn_b}"
    if d.identical:
        return f"{head}\n{identical_text(d)}"
    out = [head, "marks: = same  + added  - removed  ~ moved"]
    for s in d.steps:
        out.append(f"step {s.step}" + ("  (answer changed)" if s.answer_changed else ""))
        for side, rows, answer in (("a", s.a, s.answer_a), ("b", s.b, s.answer_b)):
            out.append(f"  {side}:" + ("" if rows else " (no such step)"))
            fold = carried_text(rows, s.step)
            if fold:
                out.append(f"    … {fold}")
                out += [f"      {_line(m)}" for m in rows if m.carried and m.mark != "same"]
            out += [f"    {_line(m)}" for m in rows if not m.carried]
            out.append(f"  {side} answered: {answer_line(answer)}")
        if s.answer_diff:
            out.append(f"  words: {_words_text(s)}")
    return "\n".join(out)


def _md_row(m: DiffMessage) -> str:
    e = escape_markdown
    return (
        f"- `{SYMBOL[m.mark]}` {m.mark} · {e(m.role)} · {e(m.source)} · {e(m.first_line)} ({m.tokens} tokens)"
    )


def _md_words(s: StepDiff) -> str:
    parts = []
    for op, text in s.answer_diff:
        t = escape_markdown(text)
        parts.append(t if op == "=" or not t.strip() else f"~~{t}~~" if op == "-" else f"**{t}**")
    return "".join(parts)


def diff_markdown(d: TurnDiff) -> str:
    """Markdown of the same model; carried history in a ``<details>`` that opens on a click."""
    e = escape_markdown
    out = [f"## Turn {d.turn_a} of {e(d.session_a)} (a) and turn {d.turn_b} of {e(d.session_b)} (b)", ""]
    if d.identical:
        return "\n".join([*out, e(identical_text(d)), ""])
    for s in d.steps:
        out += [f"### Step {s.step}" + (" — the answer changed" if s.answer_changed else ""), ""]
        for side, rows, answer in (("a", s.a, s.answer_a), ("b", s.b, s.answer_b)):
            out += [f"**{side}**" + ("" if rows else ": no such step"), ""]
            fold = carried_text(rows, s.step)
            if fold:
                out += ["<details>", f"<summary>{escape_html(fold)}</summary>", ""]
                out += [_md_row(m) for m in rows if m.carried]
                out += ["", "</details>", ""]
            out += [_md_row(m) for m in rows if not m.carried]
            out += ["", f"{side} answered: {e(answer_line(answer))}", ""]
        if s.answer_diff:
            out += [f"words (~~a~~ **b**): {_md_words(s)}", ""]
    return "\n".join(out)


def _html_rows(rows: Sequence[DiffMessage]) -> str:
    h = escape_html
    return "".join(
        f'<div class="nba-diff-msg" data-mark="{m.mark}"><span class="nba-diff-mark">{SYMBOL[m.mark]}</span>'
        f'<span class="nba-badge">{h(m.badge or m.source)}</span><span class="nba-line">{h(m.first_line)}'
        f'</span><span class="nba-diff-where">{h(m.mark)}</span></div>'
        for m in rows
    )


def _html_words(s: StepDiff) -> str:
    tag = {"=": "span", "-": "del", "+": "ins"}
    return "".join(f"<{tag[op]}>{escape_html(text)}</{tag[op]}>" for op, text in s.answer_diff)


def diff_html(d: TurnDiff) -> str:
    """Static HTML (the saved output of ``%agent diff`` where no painter runs): the same structure
    as the browser's painter, carried history in a ``<details>``."""
    h = escape_html
    head = (
        f'<div class="nbagent nba-diff"><div class="nba-diff-columns">a · turn {d.turn_a} of '
        f"{h(d.session_a[:8])} — b · turn {d.turn_b} of {h(d.session_b[:8])}</div>"
    )
    if d.identical:
        return f'{head}<div class="nba-diff-identical">{h(identical_text(d))}</div></div>'
    out = [head]
    for s in d.steps:
        changed = "the answer changed" if s.answer_changed else "same answer"
        out.append(
            f'<div class="nba-diff-step"><div class="nba-diff-step-head">step {s.step} · {changed}</div>'
        )
        out.append('<div class="nba-diff-sides">')
        for rows, answer in ((s.a, s.answer_a), (s.b, s.answer_b)):
            out.append('<div class="nba-diff-side">')
            fold = carried_text(rows, s.step)
            if fold:
                out.append(
                    f"<details><summary>{h(fold)}</summary>{_html_rows([m for m in rows if m.carried])}</details>"
                )
            out.append(_html_rows([m for m in rows if not m.carried]))
            out.append(
                f'<div class="nba-diff-answer"><span class="nba-line">{h(answer_line(answer))}</span></div>'
            )
            out.append("</div>")
        out.append("</div>")
        if s.answer_diff:
            out.append(f'<div class="nba-diff-words">{_html_words(s)}</div>')
        out.append("</div>")
    out.append("</div>")
    return "".join(out)
