"""The invoice story for the "What if…" editor's tests: a model whose answer depends on whether a
note is in the request (so a replay that drops or moves it changes the answer), registered as the
provider ``story`` so a fork resolves it by its recorded name, as a real model would be."""

from __future__ import annotations

from typing import Any

import nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.models.registry import register_provider

NOTE = "prices are in EUR"
INJECT: list[Any] = []
"""The agent the tool injects the note into while it runs (set for the parent's turn only)."""


def answer(request: Any) -> str:
    seen = any(NOTE in m.plain_text for m in request.messages)
    return "The total is 120 EUR." if seen else "The total is 120 USD (I assumed dollars)."


def story_model(_rest: str = "invoice") -> ScriptedModel:
    """Stateless (each answer from what the request holds, so every replay and attribution run of
    one model object agrees): step 1 calls the tool, step 2 answers, in euros when the note is in
    its request."""

    def respond(request: Any) -> Any:
        if not any(m.kind == "tool" for m in request.messages):
            return Response(tool_calls=[ToolCall("invoice_total", id="c1")])
        return answer(request)

    return ScriptedModel([respond] * 200, name="story:invoice")


def invoice_total() -> str:
    """The invoice total, without its currency."""
    if INJECT:
        INJECT[0].inject(nbagent.UserMessage.text(NOTE, {"kind": "note", "label": "currency note"}))
        INJECT[0].inject(
            nbagent.UserMessage.text("invoice date: May 2", {"kind": "note", "label": "date note"})
        )
    return "120"


register_provider("story", story_model)


async def open_story(path: Any) -> nbagent.Agent:
    """A session whose turn 1 had a customer note pending before it, and the currency and date
    notes arriving during step 1's tool batch (seen by step 2)."""
    agent = nbagent.open_session(path, model="story:invoice", tools=[invoice_total])
    agent.inject(nbagent.UserMessage.text("customer: ACME", {"kind": "note", "label": "customer"}))
    INJECT[:] = [agent]
    try:
        await agent.run("What is the invoice total?")
    finally:
        INJECT.clear()
    return agent
