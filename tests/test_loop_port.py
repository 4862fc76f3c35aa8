"""The loop and the tool batch ask the driver only what ``LoopPort`` names (issue #30, item 2)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from eventtrace import run

import nbagent
import nbagent.core.loop
import nbagent.core.tool_batch
from nbagent.core import loop_port
from nbagent.core.driver import Driver
from nbagent.core.loop_port import LoopPort, StepRequest
from nbagent.models import ScriptedModel

PORT_NAMES = ("driver", "port")
"""The names the loop and the tool batch give the port."""
REQUEST_NAMES = ("request",)
"""The name the loop gives a step's request (:class:`StepRequest`)."""
OFFER_READS = {"model", "tools", "tool_for", "approver", "context_limit"}
"""What the loop and the tool batch read of the agent's offer (``driver.offer``)."""
MODULES = (nbagent.core.loop, nbagent.core.tool_batch)


def _members(protocol: type) -> set[str]:
    tree = ast.parse(inspect.getsource(loop_port))
    (cls,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == protocol.__name__)
    return {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}


def _tree(module: object) -> ast.AST:
    return ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))  # type: ignore[arg-type]


def _used(module: object, names: tuple[str, ...]) -> set[str]:
    return {
        node.attr
        for node in ast.walk(_tree(module))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names
    }


def _offer_uses(module: object) -> list[tuple[str, bool]]:
    """``(attribute, written)`` for each ``driver.offer.X`` and ``offer.X`` in ``module``."""
    out = []
    for node in ast.walk(_tree(module)):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        via_port = (
            isinstance(base, ast.Attribute)
            and base.attr == "offer"
            and isinstance(base.value, ast.Name)
            and base.value.id in PORT_NAMES
        )
        if via_port or (isinstance(base, ast.Name) and base.id == "offer"):
            out.append((node.attr, not isinstance(node.ctx, ast.Load)))
    return out


def test_the_loop_and_the_tool_batch_use_only_the_ports_members():
    members = _members(LoopPort)
    for module in MODULES:
        used = _used(module, PORT_NAMES)
        assert used, module
        assert used <= members, f"{module.__name__} uses {sorted(used - members)} outside LoopPort"
    requests = _used(nbagent.core.loop, REQUEST_NAMES)
    allowed = _members(StepRequest)
    assert requests, "the loop names its StepRequest 'request'"
    assert requests <= allowed, f"the loop uses {sorted(requests - allowed)} outside StepRequest"


def test_the_loop_and_the_tool_batch_only_read_the_offer():
    for module in MODULES:
        uses = _offer_uses(module)
        assert uses or module is not nbagent.core.tool_batch
        assert {name for name, _ in uses} <= OFFER_READS, module.__name__
        assert not [name for name, written in uses if written], f"{module.__name__} changes the offer"


def test_the_loop_and_the_tool_batch_annotate_the_port_not_the_driver():
    for module in MODULES:
        source = Path(inspect.getfile(module)).read_text(encoding="utf-8")
        assert "Driver" not in source.replace("LoopPort", ""), module.__name__
        assert "driver: LoopPort" in source


def test_the_port_stays_small():
    assert len(_members(LoopPort)) <= 12
    assert len(_members(StepRequest)) <= 5  # turn, step, estimate, header, body


def test_the_walk_fails_on_a_member_outside_the_port(tmp_path, monkeypatch):
    """The check above is not vacuous: a loop that asks the driver for something else fails it."""
    widened = tmp_path / "widened_loop.py"
    widened.write_text("def f(driver):\n    return driver.journal.committed\n", encoding="utf-8")
    module = type(nbagent)("widened_loop")
    module.__file__ = str(widened)
    assert not _used(module, PORT_NAMES) <= _members(LoopPort)


def test_the_driver_implements_the_port(tmp_path):
    async def main() -> None:
        agent = nbagent.open_session(tmp_path / "s.nbagent", model=ScriptedModel(["hi"]))
        try:
            driver: Driver = agent.driver
            port: LoopPort = driver  # the static check: mypy/pyright reject a driver that does not fit
            for name in _members(LoopPort):
                assert hasattr(port, name), name
            assert port.next_step_pending is False
            assert port.next_turn() is None  # nothing pending: no turn opens
            assert port.offer is agent.driver.offer
            request: StepRequest = port.request(1, 1)
            for name in _members(StepRequest):
                assert hasattr(request, name), name
            assert request.header() is not None  # the session's first request carries one
            assert port.commit() is None  # nothing staged: nothing written
        finally:
            await agent.close()

    run(main())
