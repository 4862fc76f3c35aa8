"""The notebook's approval desk (SPEC §9.4): who decides, exactly one decision per question, what the
model reads after a denial, and what a late click or a keyboard user is told."""

from __future__ import annotations

import asyncio
import hashlib
import re
import threading
from typing import Any

import pytest
from eventtrace import run, trace

import nbagent
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.notebook.tools import approvals as approvals_module
from nbagent.notebook.tools.approvals import Approvals, Question, Settled, decided_call, default_timeout
from nbagent.testing import check_invariants
from nbagent.views.timeline import Timeline
from nbagent.widgets.approval import ApprovalWidget, prompt_text, question_data, settled_bundle

ran: list[str] = []


@nbagent.tool(requires_approval=True)
def run_code(code: str) -> str:
    """Run code."""
    ran.append(code)
    return f"ran {code}"


def calls(*codes: str) -> ScriptedModel:
    """A model asking to run each code in its own step, then saying "done"."""
    steps: list[Any] = [
        Response(tool_calls=[ToolCall("run_code", {"code": c}, id=f"c{i}")]) for i, c in enumerate(codes)
    ]
    return ScriptedModel([*steps, "done"])


def decisions(agent: nbagent.Agent) -> list[tuple[str, str | None]]:
    return [(e.type, e.data.get("outcome")) for e in agent.events if e.type.startswith("approval/")]


def result_of(agent: nbagent.Agent, call_id: str) -> tuple[str, str | None]:
    for e in agent.events:
        if e.type == "tool/result" and e.data["message"]["source"]["call_id"] == call_id:
            return e.data["message"]["content"][0]["content"][0]["text"], e.data.get("error", {}).get("code")
    raise AssertionError(f"no result for {call_id}")


class Recorder:
    """Listens to a desk; ``asked`` is set when a question opens (on the agent loop)."""

    def __init__(self, desk: Approvals) -> None:
        self.seen: list[Question | Settled] = []
        self.asked = asyncio.Event()
        desk.listeners.append(self.on)

    def on(self, what: Question | Settled) -> None:
        self.seen.append(what)
        if isinstance(what, Question):
            self.asked.set()

    def settled(self) -> list[tuple[str, str]]:
        return [(s.outcome, s.by) for s in self.seen if isinstance(s, Settled)]


def opened(db: Any, model: ScriptedModel, **desk_options: Any) -> tuple[nbagent.Agent, Approvals, Recorder]:
    agent = nbagent.open_session(db, model=model, tools=[run_code])
    desk = Approvals(agent, **desk_options)
    agent.approver = desk
    return agent, desk, Recorder(desk)


def test_a_decision_from_another_thread_lets_the_call_run(db):
    async def main() -> nbagent.Agent:
        ran.clear()
        agent, desk, seen = opened(db, calls("x = 1"))
        agent.followup("go")
        await seen.asked.wait()
        assert [q.code for q in desk.pending] == ["x = 1"]
        said: list[str] = []
        worker = threading.Thread(target=lambda: said.append(desk.decide("allowed-once", by="click")))
        worker.start()
        await agent.when_idle()
        worker.join()
        assert said == ["approved run_code (click)"]
        assert seen.settled() == [("allowed-once", "click")]
        await agent.close()
        return agent

    agent = run(main())
    assert decisions(agent) == [("approval/asked", None), ("approval/decided", "allowed-once")]
    assert ran == ["x = 1"]
    check_invariants(agent.events)


def test_a_denial_is_an_error_result_the_model_reads(db):
    async def main() -> tuple[nbagent.Agent, ScriptedModel]:
        ran.clear()
        model = calls("rm_everything()")
        agent, desk, seen = opened(db, model)
        agent.followup("go")
        await seen.asked.wait()
        assert desk.decide("rejected", by="%agent deny") == "denied run_code (%agent deny)"
        await agent.when_idle()
        await agent.close()
        return agent, model

    agent, model = run(main())
    assert ran == []
    assert decisions(agent) == [("approval/asked", None), ("approval/decided", "rejected")]
    assert result_of(agent, "c0") == ("Error: the user did not approve this call (rejected)", "DENIED")
    last_request = model.requests[-1].messages[-1]
    assert last_request.content[0]["is_error"] is True
    check_invariants(agent.events, requests=model.requests)


def test_the_first_decision_wins_and_a_second_is_told_so(db):
    async def main() -> list[str]:
        agent, desk, seen = opened(db, calls("x"))
        agent.followup("go")
        await seen.asked.wait()
        first = desk.decide("rejected", by="click")
        second = desk.decide("allowed-once", by="%agent approve")
        await agent.when_idle()
        await agent.close()
        assert decisions(agent)[-1] == ("approval/decided", "rejected")
        return [first, second]

    assert run(main()) == ["denied run_code (click)", "run_code was already decided (click); nothing changed"]


def test_a_click_after_the_turn_ended_is_ignored_with_a_message(db):
    async def main() -> str:
        agent, desk, seen = opened(db, calls("x"))
        agent.followup("go")
        await seen.asked.wait()
        (question,) = desk.pending
        desk.decide("allowed-once", by="click")
        await agent.when_idle()
        late = desk.decide("rejected", question.id, by="click")
        await agent.close()
        assert decisions(agent) == [("approval/asked", None), ("approval/decided", "allowed-once")]
        return late

    assert (
        run(main()) == "ignored: that approval in turn 1 is over (run_code approved (click)); nothing changed"
    )


def test_a_reused_call_id_asks_a_new_question_that_the_old_id_and_prompt_cannot_decide(db):
    async def main() -> tuple[nbagent.Agent, list[str], Question, Question]:
        ran.clear()
        model = ScriptedModel(
            [
                Response(tool_calls=[ToolCall("run_code", {"code": "first = 1"}, id="c1")]),
                "one",
                Response(tool_calls=[ToolCall("run_code", {"code": "second = 2"}, id="c1")]),
                "two",
            ]
        )
        agent, desk, seen = opened(db, model)
        agent.followup("go")
        await seen.asked.wait()
        (old,) = desk.pending
        old_prompt = ApprovalWidget(
            question_data(old),
            decide=lambda outcome, qid, remember: desk.decide(outcome, qid, by="click"),  # type: ignore[arg-type]
            seen=desk.seen,
        )
        old_prompt.click("allowed-once")
        old_prompt.settle("allowed-once", "run_code approved (click)")
        await agent.when_idle()
        seen.asked.clear()
        agent.followup("again")
        await seen.asked.wait()
        (new,) = desk.pending
        said = []
        try:
            old_prompt._handle_custom_msg({"type": "decide", "id": old.id, "outcome": "allowed-once"}, [])
            said.append(old_prompt.notice)
        finally:
            old_prompt.close()
        said.append(desk.decide("allowed-once", old.id, by="%agent approve"))
        said.append(desk.decide("allowed-once", new.id, by="click", arguments_sha256=old.arguments_sha256))
        assert desk.pending == (new,)
        said.append(desk.decide("rejected", new.id, by="%agent deny"))
        await agent.when_idle()
        await agent.close()
        return agent, said, old, new

    agent, said, old, new = run(main())
    assert ran == ["first = 1"]
    assert (old.call_id, new.call_id) == ("c1", "c1") and old.id != new.id
    asked = [e.data for e in agent.events if e.type == "approval/asked"]
    assert [(a["id"], a["arguments_sha256"]) for a in asked] == [
        (q.id, hashlib.sha256(q.arguments.encode()).hexdigest()) for q in (old, new)
    ]
    over = "ignored: that approval in turn 1 is over (run_code approved (click)); nothing changed"
    assert said == [
        over,
        over,
        f"ignored: approval {new.id} asks about other code than the decision names; nothing changed",
        "denied run_code (%agent deny)",
    ]
    assert decisions(agent) == [
        ("approval/asked", None),
        ("approval/decided", "allowed-once"),
        ("approval/asked", None),
        ("approval/decided", "rejected"),
    ]
    check_invariants(agent.events)


def test_a_prompt_ignores_a_decision_naming_another_question():
    said: list[str] = []
    question = {
        "id": "approval-0123456789abcdef",
        "tool": "run_code",
        "turn": 1,
        "code": "x",
        "arguments": "{}",
    }
    widget = ApprovalWidget(
        question, decide=lambda *a: said.append("decided") or "decided", seen=lambda _: None
    )
    try:
        widget._handle_custom_msg({"type": "decide", "id": "approval-other", "outcome": "allowed-once"}, [])
        assert said == []
        assert widget.notice == (
            "ignored: the decision names approval approval-other, but this prompt asks "
            "approval-0123456789abcdef; nothing changed"
        )
    finally:
        widget.close()


def test_allow_for_this_session_approves_this_call_and_stops_asking_for_that_tool(db):
    async def main() -> tuple[nbagent.Agent, Recorder]:
        ran.clear()
        agent, desk, seen = opened(db, calls("a", "b", "c"))
        agent.followup("go")
        await seen.asked.wait()
        said = desk.decide("allowed-once", by="click", remember=True)
        assert said == "approved run_code (click, and for the rest of the session)"
        await agent.when_idle()
        await agent.close()
        return agent, seen

    agent, seen = run(main())
    assert ran == ["a", "b", "c"]
    assert decisions(agent) == [("approval/asked", None), ("approval/decided", "allowed-once")] * 3
    # every one of the three was allowed for the session: the first by the click, the others by it
    decided = [e.data for e in agent.events if e.type == "approval/decided"]
    assert [d.get("scope") for d in decided] == ["session"] * 3
    assert [type(s).__name__ for s in seen.seen] == ["Question", "Settled", "Settled", "Settled"]
    assert seen.settled() == [
        ("allowed-session", "click, and for the rest of the session"),
        *[("allowed-session", "allowed for this session")] * 2,
    ]
    timeline = Timeline()
    timeline.feed(agent.events)
    texts = [n["text"] for n in timeline.nodes.values() if n["type"] == "approval"]
    assert texts == ["run_code: approved for this session"] * 3


def test_session_policy_runs_without_asking_and_ask_asks_again(db):
    async def main() -> Recorder:
        agent, desk, seen = opened(db, calls("a", "b"))
        desk.policy = "session"
        await agent.run("go")
        assert not seen.asked.is_set()
        desk.policy = "ask"
        agent.set_model(calls("c"))
        agent.followup("again")
        await seen.asked.wait()
        desk.decide("rejected")
        await agent.when_idle()
        await agent.close()
        return seen

    assert run(main()).settled() == [
        ("allowed-session", "allowed for this session"),
        ("allowed-session", "allowed for this session"),
        ("rejected", "code"),
    ]


def test_with_nobody_there_the_question_is_unavailable_after_the_timeout(db):
    async def main() -> tuple[nbagent.Agent, Recorder]:
        ran.clear()
        agent, _desk, seen = opened(db, calls("x"), timeout=0.05)
        await agent.run("go")
        await agent.close()
        return agent, seen

    agent, seen = run(main())
    assert ran == []
    assert decisions(agent) == [("approval/asked", None), ("approval/decided", "unavailable")]
    assert result_of(agent, "c0") == ("Error: the user did not approve this call (unavailable)", "DENIED")
    assert seen.settled() == [("unavailable", "nobody there to ask for 0.05 s")]


def test_a_prompt_on_screen_keeps_the_question_open_past_the_timeout(db, monkeypatch):
    monkeypatch.setattr(approvals_module, "PRESENCE", 3600.0)

    async def main() -> nbagent.Agent:
        agent, desk, seen = opened(db, calls("x"), timeout=0.05)
        agent.followup("go")
        await seen.asked.wait()
        (question,) = desk.pending
        desk.seen(question.id)  # a front end renders the prompt
        await asyncio.sleep(0.5)  # ten timeouts pass
        assert desk.pending == (question,)
        desk.decide("allowed-once", by="click")
        await agent.when_idle()
        await agent.close()
        return agent

    assert decisions(run(main()))[-1] == ("approval/decided", "allowed-once")


def test_cancelling_the_turn_closes_the_question_cancelled(db):
    async def main() -> tuple[nbagent.Agent, Recorder, str]:
        agent, desk, seen = opened(db, calls("x"))
        agent.followup("go")
        await seen.asked.wait()
        (question,) = desk.pending
        agent.cancel("interrupt")
        await agent.when_idle()
        late = desk.decide("allowed-once", question.id, by="click")
        await agent.close()
        return agent, seen, late

    agent, seen, late = run(main())
    assert trace(agent.events)[-5:] == [
        "approval/asked",
        "approval/decided",
        "TR c0 ABORTED",
        "SE 1.1",
        "TE 1 aborted:interrupt",
    ]
    assert decisions(agent)[-1] == ("approval/decided", "cancelled")
    assert seen.settled() == [("cancelled", "cancel")]
    assert (
        late
        == "ignored: that approval in turn 1 is over (run_code cancelled with the turn (cancel)); nothing changed"
    )


def test_a_keyboard_decision_made_before_the_question_decides_it_when_asked(db):
    async def main() -> tuple[nbagent.Agent, Recorder, str]:
        ran.clear()
        agent, desk, seen = opened(db, calls("x"))
        waiter = desk.decide_next("allowed-once", by="%agent approve")
        assert not waiter.done.done()
        await agent.run("go")
        said = waiter.done.result(timeout=0)
        await agent.close()
        assert waiter.question is not None and waiter.early  # what it approved, never shown before
        said += " — " + decided_call(waiter.question, early=waiter.early)
        return agent, seen, said

    _agent, seen, said = run(main())
    assert re.fullmatch(
        r"approved run_code \(%agent approve\) — approval approval-[0-9a-f]{16} in turn 1, which the model "
        r"asked after this command ran, for:\n    x",
        said,
    ), said
    assert ran == ["x"]
    assert [type(s).__name__ for s in seen.seen] == ["Settled"]  # never shown: decided as it was asked


def test_a_withdrawn_keyboard_waiter_decides_nothing(db):
    async def main() -> nbagent.Agent:
        agent, desk, _seen = opened(db, calls("x"), timeout=0.05)
        waiter = desk.decide_next("allowed-once", by="%agent approve")
        desk.forget(waiter)
        await agent.run("go")
        await agent.close()
        assert not waiter.done.done()
        return agent

    assert decisions(run(main()))[-1] == ("approval/decided", "unavailable")


def test_only_people_decide_allowed_once_or_rejected():
    with pytest.raises(ValueError, match="a person decides 'allowed-once' or 'rejected', not 'cancelled'"):
        Approvals().decide("cancelled")  # type: ignore[arg-type]
    assert Approvals().decide("allowed-once") == "no approval is pending"


def test_the_timeout_comes_from_the_environment_when_set(monkeypatch):
    monkeypatch.setenv("NBAGENT_APPROVAL_TIMEOUT", "7.5")
    assert default_timeout() == 7.5
    monkeypatch.setenv("NBAGENT_APPROVAL_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="NBAGENT_APPROVAL_TIMEOUT='soon' is not a number of seconds"):
        default_timeout()
    monkeypatch.setenv("NBAGENT_APPROVAL_TIMEOUT", "0")
    with pytest.raises(ValueError, match="must be more than 0 seconds"):
        Approvals()


# -- the prompt widget ------------------------------------------------------------------------------


def test_the_prompt_widget_decides_through_its_callbacks_and_shows_the_answer():
    said: list[tuple[str, str, bool]] = []
    seen: list[str] = []
    question = {"id": "approval-c0", "tool": "run_code", "turn": 2, "code": "df.head()", "arguments": "{}"}
    widget = ApprovalWidget(
        question,
        decide=lambda outcome, qid, remember: (
            said.append((outcome, qid, remember)) or "approved run_code (click)"
        ),
        seen=seen.append,
    )
    try:
        widget._handle_custom_msg({"type": "seen", "id": "approval-c0"}, [])
        widget._handle_custom_msg({"type": "decide", "outcome": "allowed-once", "remember": True}, [])
        widget._handle_custom_msg({"type": "decide", "outcome": "drop tables"}, [])  # not a decision
        assert seen == ["approval-c0"]
        assert said == [("allowed-once", "approval-c0", True)]
        assert widget.notice == "approved run_code (click)"
        widget.settle("allowed-once", "run_code approved (click)")
        assert (widget.state, widget.outcome) == ("allowed-once", "run_code approved (click)")
    finally:
        widget.close()


def test_the_prompt_and_its_record_read_as_text_without_a_front_end():
    question = {"id": "approval-c0", "tool": "run_code", "turn": 2, "code": "x = 1", "arguments": "{}"}
    assert (
        prompt_text(question)
        == "approval needed (turn 2): run_code wants to run\nx = 1\n→ %agent approve or %agent deny (id approval-c0)"
    )
    bundle = settled_bundle([(question, "rejected", "run_code denied (click)")])
    assert bundle["text/plain"] == "approval (turn 2): run_code denied (click)\nx = 1"
    assert 'data-state="rejected"' in bundle["text/html"] and "<script" not in bundle["text/html"]
    hostile = {**question, "code": "</pre><img src=x onerror=alert(1)>"}
    assert "<img" not in settled_bundle([(hostile, "rejected", "denied")])["text/html"]


def test_a_decided_record_reads_right_when_a_sanitizer_strips_its_styles():
    """An untrusted notebook's sanitizer drops <style> and class styling: the record's words, with
    their separators, and its emphasis are in the markup itself."""
    import re
    from html.parser import HTMLParser

    class Text(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.parts: list[str] = []
            self.strong = 0
            self.bold: list[str] = []
            self.skip = False

        def handle_starttag(self, tag: str, attrs: Any) -> None:
            self.skip = tag == "style"
            self.strong += tag == "strong"

        def handle_endtag(self, tag: str) -> None:
            self.skip = False
            self.strong -= tag == "strong"
            if tag in ("div", "pre"):
                self.parts.append("\n")

        def handle_data(self, data: str) -> None:
            if not self.skip:
                self.parts.append(data)
                if self.strong:
                    self.bold.append(data)

    question = {"id": "approval-c0", "tool": "run_code", "turn": 1, "code": "x = 1", "arguments": "{}"}
    html = settled_bundle([(question, "allowed-once", "run_code approved (allowed for this session)")])[
        "text/html"
    ]
    reader = Text()
    reader.feed(html)
    lines = [line.strip() for line in re.split(r"\n+", "".join(reader.parts)) if line.strip()]
    assert lines == ["Approval · run_code · turn 1", "x = 1", "run_code approved (allowed for this session)"]
    assert reader.bold == ["Approval · run_code", "run_code approved (allowed for this session)"]


def test_a_decided_cells_bundle_keeps_the_timeline_and_says_each_decision_in_its_words(db):
    """The %followup cell of a call allowed for the session says so (not "approved once"), in the same
    three MIME types as every other output."""
    from nbagent.notebook.tools.approval_prompts import with_records
    from nbagent.views import TIMELINE_MIME, TurnView

    async def main() -> tuple[nbagent.Agent, Recorder]:
        ran.clear()
        agent, desk, seen = opened(db, calls("a", "b"))
        agent.followup("go")
        await seen.asked.wait()
        desk.decide("allowed-once", by="click", remember=True)
        await agent.when_idle()
        await agent.close()
        return agent, seen

    agent, seen = run(main())
    view = TurnView("followup", "go")
    view.claimed(1)
    view.feed(agent.events)
    records = [
        (question_data(s.question), s.outcome, s.sentence) for s in seen.seen if isinstance(s, Settled)
    ]
    bundle = with_records(view.bundle(), records)
    assert set(bundle) == {TIMELINE_MIME, "text/html", "text/plain"}
    marks = [n["text"] for n in bundle[TIMELINE_MIME]["nodes"] if n["type"] == "approval"]
    assert marks == [
        "run_code approved (click, and for the rest of the session)",
        "run_code approved (allowed for this session)",
    ]
    assert "approved once" not in bundle["text/plain"] and "approved once" not in bundle["text/html"]
    assert "run_code approved (allowed for this session)" in bundle["text/plain"]
