"""``%agent context`` and ``%agent context-limit warn|block``, and the meter's line of ``%agent status``
(SPEC §12). The numbers come from the one view model (:mod:`nbagent.views.meter`)."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from nbagent.views.meter import context_breakdown


def context(session: Any) -> None:
    """Print the next request's breakdown by source (history and pending inbox), largest items named."""
    agent = session.ensure(create=False)
    if agent is None:
        print("no session open: nothing to measure yet")
        return
    print("\n".join(context_breakdown(agent).lines()))


def context_limit(session: Any, value: str) -> None:
    """``warn`` (a request above 90 % of the window carries a warning) or ``block`` (it is rejected)."""
    if value not in ("warn", "block"):
        raise UsageError(f"%agent context-limit takes warn or block (got {value!r})")
    agent = session.ensure()
    agent.context_limit = value
    what = (
        "a request estimated above 90% of the context window ends its turn blocked"
        if value == "block"
        else "a request estimated above 90% of the context window is sent with a warning"
    )
    print(f"nbagent: context-limit {value}: {what}")


def usage_line(agent: Any) -> str:
    """``tokens: …`` for ``%agent status``: requests, tokens in and out, cost so far."""
    from nbagent.views.timeline import project

    return f"tokens: {project(agent.events).usage.summary()['text']}"
