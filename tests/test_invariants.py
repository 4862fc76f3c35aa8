"""``nbagent.testing.check_invariants`` raises on each kind of violation (SPEC §10)."""

from __future__ import annotations

import pytest
from eventtrace import run

import nbagent
from nbagent import Event
from nbagent.models import Response, ScriptedModel, ToolCall
from nbagent.testing import InvariantError, check_invariants, derive_history


def good_log(location=None):
    async def main():
        @nbagent.tool
        def t() -> str:
            return "r"

        model = ScriptedModel([Response(tool_calls=[ToolCall("t", id="c1")]), "done"])
        agent = nbagent.open_session(location, model=model, tools=[t])
        agent.inject(nbagent.UserMessage.text("ctx", source={"kind": "cell"}))
        await agent.run("go")
        agent.inject("left pending")
        await agent.close()
        return list(agent.events), agent.inbox, model.requests

    return run(main())


def edit(events, index, **changes):
    out = list(events)
    ev = out[index]
    data = dict(ev.data)
    data.update(changes.pop("data", {}))
    out[index] = Event(
        seq=ev.seq, time=changes.get("time", ev.time), type=changes.get("type", ev.type), data=data
    )
    return out


def drop(events, index):
    """Remove one event and renumber the rest, so only the removal itself is wrong."""
    kept = [e for n, e in enumerate(events) if n != index]
    return [Event(i, e.time, e.type, e.data) for i, e in enumerate(kept)]


def find(events, type_, n=0):
    return [i for i, e in enumerate(events) if e.type == type_][n]


@pytest.mark.stores
def test_a_real_log_passes_with_inbox_and_requests(db):
    events, inbox, requests = good_log(db)
    check_invariants(events, inbox=inbox, requests=requests)
    assert derive_history(events)[-1].plain_text == "done"
    (row,) = nbagent.list_sessions(db)
    stored = nbagent.read_events(db, row.id)
    assert list(stored) == events
    check_invariants(stored, inbox=inbox, requests=requests)


def test_seq_gaps_and_time_going_back_are_caught():
    events, _, _ = good_log()
    with pytest.raises(InvariantError, match="seq 4: expected seq 3"):
        check_invariants(events[:3] + events[4:])
    bad = edit(events, 5, time=events[4].time - 10)
    with pytest.raises(InvariantError, match="goes back"):
        check_invariants(bad)


def test_nested_or_misnumbered_turns_and_steps_are_caught():
    events, _, _ = good_log()
    i = find(events, "turn/start")
    with pytest.raises(InvariantError, match="follows turn 0"):
        check_invariants(edit(events, i, data={"turn": 2}))
    j = find(events, "step/start", 1)
    with pytest.raises(InvariantError, match="follows step"):
        check_invariants(edit(events, j, data={"step": 3}))
    k = find(events, "step/end", 0)
    with pytest.raises(InvariantError, match="starts inside open step"):
        check_invariants(drop(events, k))
    end = find(events, "step/end", 1)
    with pytest.raises(InvariantError, match="turn/end with step"):
        check_invariants(drop(events, end))


def test_a_tool_call_without_result_or_a_result_without_call_is_caught():
    events, _, _ = good_log()
    r = find(events, "tool/result")
    with pytest.raises(InvariantError, match="without a result"):
        check_invariants(drop(events, r))
    c = find(events, "tool/call")
    with pytest.raises(InvariantError, match="no tool/call before it"):
        check_invariants(drop(events, c))


def test_a_claim_outside_a_turn_and_an_unclaimed_user_message_are_caught():
    events, _, _ = good_log()
    claim = find(events, "agent/inbox/spliced", 2)
    assert events[claim].data.get("removed_count") and "outcome" not in events[claim].data
    start = find(events, "turn/start")
    moved = [events[claim]] + [e for n, e in enumerate(events) if n != claim]
    moved = [Event(i, e.time, e.type, e.data) for i, e in enumerate(moved)]
    with pytest.raises(InvariantError, match="claim outside an open turn"):
        check_invariants(moved)
    no_claims = [
        e
        for n, e in enumerate(events)
        if not (
            n > start
            and events[n].type == "agent/inbox/spliced"
            and "outcome" not in e.data
            and e.data.get("removed_count")
        )
    ]
    no_claims = [Event(i, e.time, e.type, e.data) for i, e in enumerate(no_claims)]
    with pytest.raises(InvariantError, match="still pending"):
        check_invariants(no_claims)


def test_an_inbox_or_a_request_that_differs_from_the_log_is_caught():
    events, _, requests = good_log()

    class Other:
        next_turn = ()
        next_step = ()

    with pytest.raises(InvariantError, match="live inbox"):
        check_invariants(events, inbox=Other())
    forged = requests[0].__class__(messages=requests[0].messages[:-1], log_length=requests[0].log_length)
    with pytest.raises(InvariantError, match="request #1"):
        check_invariants(events, requests=[forged])


def test_an_impossible_splice_and_a_twice_pending_id_are_caught():
    events, _, _ = good_log()
    with pytest.raises(InvariantError, match="impossible splice"):
        check_invariants(edit(events, 0, data={"start": 3}))
    dup = Event(len(events), events[-1].time, "agent/inbox/spliced", {**events[-1].data, "start": 1})
    with pytest.raises(InvariantError, match="pending twice"):
        check_invariants([*events, dup])
