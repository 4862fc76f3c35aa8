"""``%agent transcript``: the session as Markdown, pinned by a golden file over a real session.

The golden file is ``tests/golden/transcript_session.md``; regenerate it with
``NBAGENT_UPDATE_GOLDEN=1 pytest tests/test_notebook_transcript.py`` and read the diff before committing.
"""

from __future__ import annotations

import asyncio
import os
import re
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest
from kernel_helpers import ipython_shell, magics

import nbagent
from nbagent import ToolResult, UserMessage, context
from nbagent._json import thaw
from nbagent.log.events import Event
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.models.base import ModelRequest
from nbagent.testing import check_invariants
from nbagent.views import transcript

GOLDEN = Path(__file__).parent / "golden"
CAPTURED = datetime(2025, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
TRACEBACK = """Traceback (most recent call last):
  File "<cell 4>", line 1, in <module>
    sales["regoin"]
KeyError: 'regoin'"""


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("NBAGENT_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def sales() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "region": pd.Series(["north", "south", "north", "east"], dtype="category"),
            "boxes": [120, 80, 45, 60],
            "price": [2.5, 3.0, 2.5, 4.0],
        }
    )


def summary(df: pd.DataFrame) -> UserMessage:
    """The DataFrame summary with its ``memory:`` line fixed: memory use differs between pandas
    versions (the DataFrame golden files mask it too), and it also enters the transcript's size."""
    message = context.dataframe(df, name="sales", captured_at=CAPTURED)
    text = re.sub(r"^memory: .*$", "memory: (fixed for the golden file)", message.plain_text, flags=re.M)
    return UserMessage.text(text, source=thaw(message.source))


@nbagent.tool
def stock(region: str) -> ToolResult:
    """Boxes in stock for a region."""
    note = UserMessage.text(
        "stock figures are end-of-day", source={"kind": "plugin", "plugin": "warehouse", "form": "notice"}
    )
    return ToolResult(f"{region}: 165 boxes in stock", additional_contexts=[note])


async def record_session() -> tuple[tuple[Event, ...], ScriptedModel]:
    """Every element a transcript shows, in one session: context of each kind, a typed prompt, a tool
    call with its result and additional context, steering during the step, a canceled pending
    message and two messages still pending."""
    agent: nbagent.Agent

    def ask_for_stock(request: ModelRequest) -> Response:
        agent.steer("only count this year's boxes")  # the user steers while the model is answering
        return Response(tool_calls=[ToolCall("stock", {"region": "north"})])

    model = ScriptedModel([ask_for_stock, "North sold 165 boxes this year; 165 are in stock."])
    agent = nbagent.open_session(None, model=model, tools=[stock])
    agent.inject(summary(sales()))
    agent.inject(context.cell_text("prices are in EUR; units are boxes", label="units"))
    agent.inject(context.error("KeyError", "'regoin'", TRACEBACK))
    agent.followup("Which region sold the most boxes?")
    await agent.when_idle()
    draft = agent.inject(context.cell_text("a draft note I take back"))
    assert agent.inbox.remove(draft.id)
    agent.inject(context.cell_text("the fiscal year starts in April"))
    agent.inbox.append("next-turn", UserMessage.text("And last year?"))
    events = agent.events
    await agent.close()
    return events, model


async def test_the_transcript_of_a_full_session_matches_its_golden_file() -> None:
    events, model = await record_session()
    check_invariants(events)
    assert len(model.requests) == 2
    assert_golden("transcript_session.md", transcript(events, title="Sales questions"))


async def test_typed_prompts_and_injected_context_look_different_by_source_kind() -> None:
    events, _ = await record_session()
    text = transcript(events)
    prompts = re.findall(r"^\*\*You\*\* · (\w+)\n\n> (.*)$", text, flags=re.M)
    contexts = re.findall(r"^📎 (.*) · \d+ B(?: · ≈\d+ tokens?)?$", text, flags=re.M)
    assert prompts == [
        ("followup", "Which region sold the most boxes?"),
        ("steer", "only count this year's boxes"),
        ("followup", "And last year?"),
    ]
    assert contexts == [
        "**dataframe** sales · 4×3 · pandas",
        "**cell** units",
        "**error** KeyError: 'regoin'",
        "**plugin** warehouse · via stock",
        "**cell**",
    ]
    assert "*Canceled from next-step before the model saw it: cell «a draft note I take back»*" in text
    assert text.count("a draft note I take back") == 1


async def test_the_transcript_leaves_out_ids_and_times() -> None:
    events, _ = await record_session()
    text = transcript(events)
    ids = {m["id"] for e in events if e.type == "agent/inbox/spliced" for m in e.data["inserted"]}
    assert ids and not any(i in text for i in ids)
    assert not any(e.data.get("call_id", "-") in text for e in events if e.type == "tool/call")
    assert str(events[0].time) not in text


def test_agent_transcript_magic_displays_markdown_titled_with_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBAGENT_DB", raising=False)
    shown: list[dict[str, str]] = []

    async def body() -> None:
        with ipython_shell() as sh:
            sh.run_cell("%inject the data is synthetic")
            agent = magics(sh).session.agent
            monkeypatch.setattr("IPython.display.display", lambda data, **kw: shown.append(data))
            sh.run_cell("%agent transcript")
            title = f"Session {agent.session_id[:8]}"
            assert shown[-1]["text/markdown"] == transcript(agent.events, title=title)
            assert shown[-1]["text/plain"] == transcript(agent.events, title=title, escape=False)

    asyncio.run(body())
