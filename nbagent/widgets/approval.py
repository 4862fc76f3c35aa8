"""The approval prompt (SPEC §9.4): an anywidget showing what a tool wants to run, with Approve, Deny
and "allow for this session", plus the static HTML that replaces it once decided.

The widget knows nothing of the agent: it is given the question as plain data and two callables,
``decide(outcome, approval_id, remember) -> sentence`` and ``seen(approval_id)``, which the notebook
layer binds to its approval desk. Clicks arrive as custom messages on the kernel's main thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

import anywidget
import traitlets

from nbagent.views.escape import escape_html as escape
from nbagent.widgets.modules import WidgetModule

log = logging.getLogger("nbagent.widgets")

Decide = Callable[[str, str, bool], str]
Records = Sequence[tuple[Mapping[str, Any], str, str]]
"""Decided questions: ``(question, state, outcome sentence)`` each."""


@cache
def _stylesheet() -> str:
    """The prompt's CSS (a package resource), for the live prompt and its static HTML alike."""
    return resources.files("nbagent.widgets").joinpath("approval.css").read_text(encoding="utf-8")


class ApprovalWidget(anywidget.AnyWidget):
    """One question: its code and buttons while pending, its outcome afterwards.

    ``question`` is ``{id, tool, turn, code, arguments, arguments_sha256}``; ``outcome`` is a sentence once decided
    (``""`` while pending) and ``state`` the outcome's name; ``notice`` answers the last click (for
    example "ignored: that approval is over"); ``history`` shows the questions decided before it in
    the same cell, ``{question, state, outcome}`` each.
    """

    _esm = WidgetModule("approval")
    _css = _stylesheet()
    question = traitlets.Dict().tag(sync=True)
    outcome = traitlets.Unicode("").tag(sync=True)
    state = traitlets.Unicode("pending").tag(sync=True)
    notice = traitlets.Unicode("").tag(sync=True)
    history: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    context_html = traitlets.Unicode("").tag(sync=True)
    """What the cell showed before the question (the live turn view's HTML, made by nbagent)."""

    def __init__(
        self,
        question: Mapping[str, Any],
        *,
        decide: Decide,
        seen: Callable[[str], None],
        history: Records = (),
        **kwargs: Any,
    ) -> None:
        self._decide = decide
        self._seen = seen
        earlier = [{"question": dict(q), "state": state, "outcome": said} for q, state, said in history]
        super().__init__(question=dict(question), history=earlier, **kwargs)
        self.on_msg(self._on_msg)

    def settle(self, state: str, sentence: str) -> None:
        """Show the outcome; the buttons go away."""
        self.state = state
        self.outcome = sentence

    def click(self, outcome: str, *, remember: bool = False) -> str:
        """What a click on a button does (also for tests): decide this prompt's own question, and show
        the answer as the notice. A prompt whose question is over decides nothing and says so."""
        if self.outcome:
            said = (
                f"ignored: that approval{_in_turn(self.question)} is over ({self.outcome}); nothing changed"
            )
            self.notice = said
            return said
        try:
            said = self._decide(outcome, str(self.question.get("id")), remember)
        except Exception as exc:  # a decision problem is shown, never raised into a cell
            log.warning("nbagent approval click failed: %s", exc)
            said = f"could not decide: {exc}"
        self.notice = said
        return said

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("type") == "seen":
            self._seen(str(self.question.get("id")))
        elif content.get("type") == "decide" and content.get("outcome") in ("allowed-once", "rejected"):
            named = content.get("id")
            if named is not None and named != self.question.get("id"):
                self.notice = (
                    f"ignored: the decision names approval {named}, but this prompt asks "
                    f"{self.question.get('id')}; nothing changed"
                )
                return
            self.click(str(content["outcome"]), remember=bool(content.get("remember")))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        bundle = super()._repr_mimebundle_(**kwargs)
        data, meta = bundle if isinstance(bundle, tuple) else (bundle, {})
        if data is None:
            return bundle
        return {
            **data,
            "text/plain": prompt_text(self.question),
            "text/html": prompt_html(self.question),
        }, meta


def question_data(question: Any) -> dict[str, Any]:
    """The prompt's view of a question (anything with ``id``, ``tool``, ``turn``, ``code``, ``arguments``)."""
    return {
        "id": question.id,
        "tool": question.tool,
        "call_id": getattr(question, "call_id", None),
        "turn": question.turn,
        "code": question.code,
        "arguments": question.arguments,
        "arguments_sha256": getattr(question, "arguments_sha256", ""),
    }


def _in_turn(question: Mapping[str, Any]) -> str:
    turn = question.get("turn")
    return f" in turn {turn}" if turn is not None else ""


def _shown(question: Mapping[str, Any]) -> str:
    code = question.get("code")
    return str(code if isinstance(code, str) else question.get("arguments", ""))


def prompt_text(question: Mapping[str, Any]) -> str:
    """The pending prompt as text (headless runners, ``text/plain``)."""
    turn = question.get("turn")
    where = f" (turn {turn})" if turn is not None else ""
    return (
        f"approval needed{where}: {question.get('tool')} wants to run\n{_shown(question)}\n"
        f"→ %agent approve or %agent deny{_id_hint(question)}"
    )


def _id_hint(question: Mapping[str, Any]) -> str:
    """Names the question, for ``%agent approve ID`` (an id that no later question reuses)."""
    approval_id = question.get("id")
    return f" (id {approval_id})" if approval_id else ""


def prompt_html(question: Mapping[str, Any], *, outcome: str | None = None, state: str = "pending") -> str:
    """The prompt as static HTML (no buttons): pending, or with its ``outcome`` sentence."""
    turn = question.get("turn")
    # Readable without the stylesheet (an untrusted notebook's sanitizer drops it): separators are
    # text, emphasis is markup, the code is a <pre>.
    where = f' · <span class="nba-approval-where">turn {escape(str(turn))}</span>' if turn is not None else ""
    title = "Approval" if outcome else "Approval needed"
    tail = (
        f'<div class="nba-approval-outcome"><strong>{escape(outcome)}</strong></div>'
        if outcome
        else f'<div class="nba-approval-hint">%agent approve or %agent deny{escape(_id_hint(question))}</div>'
    )
    return (
        f"<div><style>{_stylesheet()}</style>"
        f'<div class="nba-approval" data-state="{escape(state)}">'
        f'<div class="nba-approval-head"><strong>{title} · {escape(str(question.get("tool")))}</strong>{where}</div>'
        f'<pre class="nba-approval-code">{escape(_shown(question))}</pre>{tail}</div></div>'
    )


def settled_bundle(records: Records) -> dict[str, Any]:
    """The MIME bundle that replaces decided prompts, one record per ``(question, state, sentence)``
    (no widget, so a saved notebook shows them)."""
    texts, htmls = [], []
    for question, state, sentence in records:
        turn = question.get("turn")
        where = f" (turn {turn})" if turn is not None else ""
        texts.append(f"approval{where}: {sentence}\n{_shown(question)}")
        htmls.append(prompt_html(question, outcome=sentence, state=state))
    return {"text/plain": "\n".join(texts), "text/html": "".join(htmls)}
