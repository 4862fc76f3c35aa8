"""One ``Failure`` (issue #30): the models make it, the loop and the hooks hold it, the records store
it as the same ``{"message", "code", "status"?, "retry_after_ms"?}`` dict as before."""

from __future__ import annotations

import json

import pytest

import nbagent
from nbagent._json import dumps
from nbagent.core.retry import RetryPolicy
from nbagent.log.events import Event, LlmRetry, TurnEnd, parse_event
from nbagent.log.vocabulary import Failure
from nbagent.models import Failure as ModelsFailure
from nbagent.models import Response, ScriptedModel
from nbagent.redaction import REDACTED


def test_the_models_and_the_log_share_one_failure_type() -> None:
    assert ModelsFailure is Failure
    assert nbagent.models.base.Failure is Failure


@pytest.mark.parametrize(
    "stored",
    [
        {"message": "scripted AUTH failure", "code": "AUTH"},
        {"message": "busy", "code": "RATE_LIMIT", "status": 429, "retry_after_ms": 5},
        {"message": "down", "code": "SERVER", "status": 503},
    ],
)
def test_a_stored_failure_reads_and_writes_back_byte_for_byte(stored: dict) -> None:
    text = json.dumps(stored, separators=(",", ":"))
    assert dumps(Failure.from_json(stored).to_json()) == text
    end = {"turn": 3, "reason": {"kind": "error", "error": stored}}
    assert dumps(parse_event(Event(1, 0, "turn/end", end)).to_json()) == dumps(end)
    retry = {"turn": 2, "step": 2, "attempt": 2, "delay_ms": 1, "failure": stored}
    assert dumps(parse_event(Event(1, 0, "llm/retry", retry)).to_json()) == dumps(retry)


def test_a_failure_is_scrubbed_when_made_and_read_as_stored() -> None:
    made = Failure("failed: Authorization: Bearer sk-abcdefghijklmnopqrstuvwx", code="AUTH")
    assert made.message == f"failed: Authorization: Bearer {REDACTED}"
    stored = {"message": "Bearer sk-abcdefghijklmnopqrstuvwx", "code": "AUTH"}  # an old log, unscrubbed
    assert Failure.from_json(stored).message == stored["message"]


def test_an_odd_stored_failure_reads_without_error_and_is_worded_as_before() -> None:
    retry = parse_event(Event(5, 0, "llm/retry", {"turn": 1, "step": 1, "failure": "not a dict"}))
    assert isinstance(retry, LlmRetry) and (retry.failure.code, retry.failure.message) == ("", "")
    end = parse_event(Event(6, 0, "turn/end", {"turn": 1, "reason": {"kind": "error", "error": {}}}))
    assert isinstance(end, TurnEnd) and end.error is not None and end.error.code == ""
    no_error = parse_event(Event(7, 0, "turn/end", {"turn": 1, "reason": {"kind": "error"}}))
    assert isinstance(no_error, TurnEnd) and no_error.error is None
    from nbagent.views.outcomes import turn_outcome

    assert turn_outcome(end).why == "UNKNOWN: the turn failed without a message"
    assert turn_outcome(no_error).why == "UNKNOWN: the turn failed without a message"


def test_a_lone_surrogate_is_replaced_when_a_failure_is_stored() -> None:
    failure = Failure("bad \ud800 text", code="SERVER", status=500)
    assert failure.storable() == Failure("bad \ufffd text", code="SERVER", status=500)


async def test_the_hook_the_notice_and_the_records_hold_the_failure() -> None:
    model = ScriptedModel([Response(failure=Failure("busy", "RATE_LIMIT", 429, retry_after_ms=0))] * 2)
    agent = nbagent.open_session(None, model=model, retry=RetryPolicy(max_retries=1, base_delay_ms=1))
    seen: list[Failure] = []
    errors: list[object] = []
    agent.on("error", lambda n: errors.append(n.error))

    async def listen(payload, next):  # type: ignore[no-untyped-def]
        seen.append(payload.failure)
        return await next()

    agent.hooks.request_error.add(listen)
    run = await agent.run("hi")
    await agent.close()
    expected = Failure("busy", "RATE_LIMIT", 429, retry_after_ms=0)
    assert seen == [expected, expected] and errors == [expected]
    records = [parse_event(e) for e in agent.events if e.type in ("llm/retry", "turn/end")]
    assert [type(r).__name__ for r in records] == ["LlmRetry", "TurnEnd"]
    assert records[0].failure == expected and records[1].error == expected  # type: ignore[union-attr]
    stored = {"message": "busy", "code": "RATE_LIMIT", "status": 429, "retry_after_ms": 0}
    assert run.end == {"turn": 1, "reason": {"kind": "error", "error": stored}}
