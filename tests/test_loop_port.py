"""The loop and the tool batch ask the driver only what ``LoopPort`` names (issue #30, item 2)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from eventtrace import run

import nbagent
import nbagent.core.loop
import nbagent.core.tool_batch
from nbagent.core.driver import Driver
from nbagent.core.loop_port import LoopPort
from nbagent.models import ScriptedModel

PORT_NAMES = ("driver", "port")
"""The names the loop and the tool batch give the port."""


def _members() -> set[str]:
    tree = ast.parse(inspect.getsource(LoopPort))
    cls = tree.body[0]
    assert isinstance(cls, ast.ClassDef)
    return {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}


def _used(module: object) -> set[str]:
    tree = ast.parse(Path(inspect.getfile(module)).read_text(encoding="utf-8"))  # type: ignore[arg-type]
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in PORT_NAMES
    }


def test_the_loop_and_the_tool_batch_use_only_the_ports_members():
    members = _members()
    for module in (nbagent.core.loop, nbagent.core.tool_batch):
        used = _used(module)
        assert used, module
        assert used <= members, f"{module.__name__} uses {sorted(used - members)} outside LoopPort"


def test_the_loop_and_the_tool_batch_annotate_the_port_not_the_driver():
    for module in (nbagent.core.loop, nbagent.core.tool_batch):
        source = Path(inspect.getfile(module)).read_text(encoding="utf-8")
        assert "Driver" not in source.replace("LoopPort", ""), module.__name__
        assert "driver: LoopPort" in source


def test_the_port_stays_small():
    assert len(_members()) <= 21


def test_the_driver_implements_the_port(tmp_path):
    async def main() -> None:
        agent = nbagent.open_session(tmp_path / "s.nbagent", model=ScriptedModel(["hi"]))
        try:
            driver: Driver = agent.driver
            port: LoopPort = driver  # the static check: mypy/pyright reject a driver that does not fit
            for name in _members():
                assert hasattr(port, name), name
            assert port.next_step_pending is False
            assert port.next_turn() is None  # nothing pending: no turn opens
        finally:
            await agent.close()

    run(main())
