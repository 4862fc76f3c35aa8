"""What an agent offers the model (``nbagent/core/offer.py``): the agent's own, read by its driver."""

from __future__ import annotations

import pytest

import nbagent
from nbagent.core.offer import Offer
from nbagent.core.tools import as_tools
from nbagent.models import ScriptedModel


def double(x: int) -> int:
    """Double x."""
    return 2 * x


def half(x: int) -> float:
    """Half of x."""
    return x / 2


def test_the_schemas_are_cached_until_the_tools_change():
    offer = Offer(ScriptedModel([]), as_tools([double]), None)
    first = offer.tool_schemas
    assert offer.tool_schemas is first
    offer.tools.update(as_tools([half]))  # a new name is seen even without tools_changed()
    assert [s["name"] for s in offer.tool_schemas] == ["double", "half"]
    offer.tools["half"] = next(iter(as_tools([double]).values()))
    offer.tools_changed()  # a replaced tool needs it
    assert [s["name"] for s in offer.tool_schemas] == ["double", "double"]


def test_a_stand_in_answers_only_names_not_offered():
    offer = Offer(ScriptedModel([]), as_tools([double]), None)
    assert offer.tool_for("nope") is None
    stand_in = next(iter(as_tools([half]).values()))
    offer.stand_in = lambda name: stand_in if name.startswith("srv__") else None
    assert offer.tool_for("double") is offer.tools["double"]
    assert offer.tool_for("srv__x") is stand_in
    assert offer.tool_for("nope") is None


async def test_the_agent_and_its_driver_share_one_offer(db):
    agent = nbagent.open_session(db, model=ScriptedModel(["hi"]), tools=[double], system="be brief")
    try:
        assert agent.driver.offer is agent.offer
        agent.set_model(ScriptedModel(["other"]))
        assert agent.driver.offer.model is agent.model
        agent.add_tool(half)
        assert [s["name"] for s in agent.driver.offer.tool_schemas] == ["double", "half"]
        agent.context_limit = "block"
        assert agent.offer.context_limit == "block"
        with pytest.raises(ValueError):
            agent.context_limit = "never"
        assert agent.max_steps == agent.driver.config.max_steps
        assert agent.system == "be brief"
    finally:
        await agent.close()
