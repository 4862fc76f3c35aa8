"""``propose_cell`` (SPEC §9.7): the call is the proposal, numbered in its turn, shown by every view
with its code as data; what the user did with it comes back as ``notebook`` context, never a turn."""

from __future__ import annotations

import json
from typing import Any

from eventtrace import run
from IPython.core.interactiveshell import InteractiveShell

import nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook.magics.live_turn import LiveTurn
from nbagent.notebook.tools.kernel_tools import NotebookTools
from nbagent.notebook.tools.proposals import CODE_CHARS, TARGET, ProposalActions, note_message
from nbagent.testing import check_invariants
from nbagent.views import timeline_html, timeline_json
from nbagent.views.bundle import TIMELINE_MIME
from nbagent.views.markdown import transcript
from nbagent.views.proposals import next_proposal_id
from nbagent.views.turn import TurnView

HOSTILE = "</pre><script>alert('x')</script><img src=x onerror=alert(1)>\nprint('&amp;')"


async def inline(fn: Any) -> Any:
    return fn()


def proposing(*calls: ToolCall) -> ScriptedModel:
    return ScriptedModel([Response(tool_calls=list(calls)), "over to you", "seen", "seen again"])


def prompt(text: str, count: int = 5) -> nbagent.UserMessage:
    source = {"kind": "user", "cell": {"execution_count": count, "cell_id": "cell-abc"}}
    return nbagent.UserMessage.text(text, source)  # type: ignore[arg-type]


def session(tmp_path: Any, model: ScriptedModel, *messages: nbagent.UserMessage) -> tuple[Any, ...]:
    shell = InteractiveShell.instance()

    async def main() -> tuple[Any, ...]:
        agent = nbagent.open_session(tmp_path / "p.nbagent.sqlite", model=model)
        NotebookTools(shell, on_main=inline).equip(agent)
        for m in messages:
            await agent.run(m)
        events = agent.events
        await agent.close()
        return events

    return run(main())


def results(events: tuple[Any, ...]) -> list[dict[str, Any]]:
    return [dict(e.data) for e in events if e.type == "tool/result"]


def result_text(data: dict[str, Any]) -> str:
    return data["message"]["content"][0]["content"][0]["text"]


def test_a_proposal_is_numbered_in_its_turn_and_its_result_names_it(tmp_path):
    model = proposing(
        ToolCall("propose_cell", {"code": "df.plot()", "note": "a first look"}, id="a"),
        ToolCall("propose_cell", {"code": "df.describe()"}, id="b"),
    )
    events = session(tmp_path, model, prompt("plot it"))
    check_invariants(events)
    texts = [result_text(r) for r in results(events)]
    assert texts[0].startswith("Proposed cell 1.1 to the user (1 line)")
    assert "notebook note naming proposal 1.1" in texts[0]
    assert texts[1].startswith("Proposed cell 1.2 ")
    assert next_proposal_id(events) == "1.2"

    bundle = timeline_json(events)
    proposals = [n for n in bundle["nodes"] if n["type"] == "proposal"]
    assert [(p["proposal"], p["code"], p["note"]) for p in proposals] == [
        ("1.1", "df.plot()", "a first look"),
        ("1.2", "df.describe()", ""),
    ]
    assert proposals[0]["cell"] == {"execution_count": 5, "cell_id": "cell-abc"}
    assert proposals[0]["text"].startswith("proposed cell 1.1 below In[5]")
    assert proposals[0]["parent"] == "step-1-1"  # under its turn, beside the call


def test_a_live_cell_view_numbers_proposals_as_the_whole_session_does(tmp_path):
    model = ScriptedModel(
        [
            Response(tool_calls=[ToolCall("propose_cell", {"code": "x = 1"})]),
            "one",
            Response(tool_calls=[ToolCall("propose_cell", {"code": "y = 2"})]),
            "two",
        ]
    )
    events = session(tmp_path, model, prompt("first"), prompt("second", 6))
    second = next(i for i, e in enumerate(events) if e.type == "turn/start" and e.data["turn"] == 2)
    view = TurnView("followup", "second")
    view.feed(events[second:])
    view.claimed(2)
    (live,) = [n for n in view.to_json()["nodes"] if n["type"] == "proposal"]
    whole = [n for n in timeline_json(events)["nodes"] if n["type"] == "proposal"]
    assert live == whole[1]
    assert (live["proposal"], live["code"], live["cell"]["execution_count"]) == ("2.1", "y = 2", 6)


def test_a_failed_call_is_no_proposal_and_a_cell_too_long_is_refused_not_cut(tmp_path):
    model = proposing(
        ToolCall("propose_cell", {"code": "x" * (CODE_CHARS + 1)}, id="long"),
        ToolCall("propose_cell", {"code": "   "}, id="empty"),
        ToolCall("propose_cell", {"cod": "typo"}, id="bad"),
    )
    events = session(tmp_path, model, prompt("go"))
    outcome = [(r["message"]["content"][0]["is_error"], result_text(r)) for r in results(events)]
    assert outcome[0][0] is True
    assert outcome[0][1].startswith(f"Error: the proposed cell has {CODE_CHARS + 1:,} characters; at most")
    assert outcome[1] == (True, "Error: the proposed cell is empty")
    assert outcome[2][0] is True
    assert not [n for n in timeline_json(events)["nodes"] if n["type"] == "proposal"]


def test_the_code_is_data_in_the_static_html_and_the_text(tmp_path):
    model = proposing(ToolCall("propose_cell", {"code": HOSTILE, "note": "<b>bold</b>"}))
    events = session(tmp_path, model, prompt("go"))
    bundle = timeline_json(events)
    html = timeline_html(bundle)
    assert "<script>" not in html and "<img" not in html and "<b>bold" not in html
    assert "&lt;/pre&gt;&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert 'class="nba-item nba-proposal"' in html and "proposed cell 1.1" in html
    assert "print(&#x27;&amp;amp;&#x27;)" in html  # escaped once, not decoded
    text = TurnView("followup", "go")
    text.feed(events)
    text.claimed(1)
    plain = text.bundle()["text/plain"]
    assert "✎ proposed cell 1.1" in plain and "│ print('&amp;')" in plain
    assert json.loads(json.dumps(bundle)) == bundle  # the bundle stays storable JSON
    markdown = transcript(events)
    assert "*proposed cell 1.1 below In\\[5\\]" in markdown, markdown
    assert f"```python\n{HOSTILE}\n```" in markdown  # fenced: shown as code, nothing in it takes effect


class FakeComm:
    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.closed = False

    def send(self, data: Any) -> None:
        self.sent.append(data)

    def close(self) -> None:
        self.closed = True


class FakeManager:
    def __init__(self) -> None:
        self.targets: dict[str, Any] = {}

    def register_target(self, name: str, fn: Any) -> None:
        self.targets[name] = fn

    def unregister_target(self, name: str, fn: Any) -> None:
        assert self.targets.pop(name) is fn


def test_an_insert_click_is_injected_as_notebook_context_and_the_next_step_sees_it(tmp_path):
    model = proposing(ToolCall("propose_cell", {"code": "df.plot()"}))
    shell = InteractiveShell.instance()
    manager = FakeManager()

    async def main() -> tuple[Any, ...]:
        agent = nbagent.open_session(tmp_path / "p.nbagent.sqlite", model=model)
        NotebookTools(shell, on_main=inline).equip(agent)
        actions = ProposalActions(lambda: agent, manager)
        assert actions.listen()
        await agent.run(prompt("plot it"))
        comm = FakeComm()
        data = {"action": "inserted-and-ran", "proposal": "1.1", "cell": {"cell_id": "new-1"},
                "below": {"execution_count": 5}}  # fmt: skip
        manager.targets[TARGET](comm, {"content": {"data": data}})
        assert comm.closed and comm.sent[0]["said"].startswith("told the agent: [notebook] The user inserted")
        assert agent.status == "idle"  # context, never a turn
        assert [m.source["kind"] for m in agent.inbox.next_step] == ["notebook"]
        await agent.run("and now?")
        actions.close()
        assert manager.targets == {}
        events = agent.events
        await agent.close()
        return events

    events = run(main())
    last = model.requests[-1]
    notes = [m for m in last.messages if getattr(m, "source", None) and m.source.get("kind") == "notebook"]
    assert len(notes) == 1
    assert dict(notes[0].source) == {
        "kind": "notebook",
        "action": "inserted-and-ran",
        "proposal": "1.1",
        "cell": {"cell_id": "new-1"},
        "below": 5,
    }
    assert notes[0].plain_text.startswith(
        "[notebook] The user inserted and ran your proposed cell 1.1 below In[5]."
    )
    assert [e.data["turn"] for e in events if e.type == "turn/start"] == [1, 2]


def test_a_bad_action_is_ignored_with_a_reason():
    actions = ProposalActions(lambda: None, FakeManager())
    assert actions.act({"action": "inserted", "proposal": "1.1"}) == (
        "ignored: no agent session is open in this kernel"
    )
    assert actions.act("x") == "ignored: a proposal action is a JSON object"
    for bad, why in (
        ({"action": "deleted", "proposal": "1.1"}, "unknown proposal action 'deleted'"),
        ({"action": "inserted", "proposal": 3}, "names its proposal by id, got 3"),
    ):
        try:
            note_message(bad)
        except ValueError as exc:
            assert why in str(exc)
        else:
            raise AssertionError(bad)
    said = note_message({"action": "inserted", "proposal": "2.1"}).plain_text
    assert (
        said == "[notebook] The user inserted your proposed cell 2.1 into the notebook. It has not run yet."
    )


class Recorder:
    """A surface that keeps what the live turn view showed and each update."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []

    def show(self, data: dict[str, Any]) -> None:
        self.updates.append(data)

    def update(self, data: dict[str, Any]) -> None:
        self.updates.append(data)


def proposal_in(bundle: dict[str, Any]) -> dict[str, Any]:
    (node,) = [n for n in bundle[TIMELINE_MIME]["nodes"] if n["type"] == "proposal"]
    return node


def test_a_proposal_the_user_inserted_says_so_in_every_view_and_in_its_finished_turns_output(tmp_path):
    """The click comes after the turn ended: the log's ``notebook`` message marks the proposal
    ``done`` in every fold, and the output of the turn that proposed it is updated (a saved
    notebook reopened shows it inserted, with Copy only)."""
    model = proposing(ToolCall("propose_cell", {"code": "df.plot()"}))
    shell = InteractiveShell.instance()
    manager = FakeManager()
    surface = Recorder()

    async def main() -> tuple[Any, ...]:
        agent = nbagent.open_session(tmp_path / "p.nbagent.sqlite", model=model)
        NotebookTools(shell, on_main=inline).equip(agent)
        message = prompt("plot it")
        view = LiveTurn(agent, message, "followup", surface)
        view.start()
        await agent.run(message)
        view.refresh()
        assert view.final and view.proposal_ids() == ["1.1"]
        assert "done" not in proposal_in(surface.updates[-1])
        told: list[str] = []

        def on_told(on: Any, pid: str, note: nbagent.UserMessage) -> None:
            told.append(pid)
            view.show_told(note)

        ProposalActions(lambda: agent, manager, on_told=on_told).listen()
        data = {"action": "inserted", "proposal": "1.1", "below": {"execution_count": 7}}
        manager.targets[TARGET](FakeComm(), {"content": {"data": data}})
        assert told == ["1.1"]
        events = agent.events
        await agent.close()
        return events

    events = run(main())
    updated = surface.updates[-1]
    node = proposal_in(updated)
    assert (node["done"], node["done_below"]) == ("inserted", 7)
    html, text = updated["text/html"], updated["text/plain"]
    assert 'data-state="inserted"' in html and "inserted below In [7]" in html
    assert "✎ proposed cell 1.1" in text and "— inserted below In [7]" in text
    whole = [n for n in timeline_json(events)["nodes"] if n["type"] == "proposal"]
    assert [(n["done"], n["done_below"]) for n in whole] == [("inserted", 7)]  # the tab and %agent show too
