"""docs/architecture.md's floor rule as a test (issue #30): an import that runs up a floor fails it.

``scripts/floors.py`` holds the floors; these tests check the package against them and check the
script on a small package where it must find an arrow up, an unplaced module and a stale entry.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _floors() -> ModuleType:
    spec = importlib.util.spec_from_file_location("floors", ROOT / "scripts" / "floors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("floors", module)
    spec.loader.exec_module(module)
    return module


def test_no_import_of_nbagent_runs_up_a_floor() -> None:
    assert _floors().problems() == []


def test_the_core_imports_no_store_backend_and_no_price_table() -> None:
    floors = _floors()
    core_up = [k for k in floors.KNOWN_UP if k[0].startswith("nbagent.core")]
    assert core_up == []


def test_the_log_is_a_leaf_and_no_arrow_up_is_known() -> None:
    """``nbagent/log/`` imports only itself and floor 1, so the models stand on it (issue #30)."""
    floors = _floors()
    edges = floors.graph([ROOT / "nbagent"], ROOT)
    from_log = {
        target
        for module, targets in edges.items()
        if module.startswith("nbagent.log")
        for target in targets
        if not target.startswith("nbagent.log")
    }
    assert from_log and all(floors.floor_of(target) == 1 for target in from_log), from_log
    assert not floors.KNOWN_UP


def test_the_rule_finds_an_arrow_up_an_unplaced_module_and_a_stale_entry(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    floors = _floors()
    package = tmp_path / "nbagent"
    (package / "core").mkdir(parents=True)
    (package / "store").mkdir()
    (package / "__init__.py").write_text("")
    (package / "core" / "__init__.py").write_text("")
    (package / "store" / "__init__.py").write_text("")
    (package / "store" / "base.py").write_text("X = 1\n")
    (package / "core" / "driver.py").write_text("def f():\n    from nbagent.store.base import X\n")
    (package / "newroom.py").write_text("")
    monkeypatch.setattr(floors, "KNOWN_UP", {("nbagent.models.echo", "nbagent.core.loop")})
    found = floors.problems(tmp_path)
    assert "nbagent.core.driver (floor 4) imports nbagent.store.base (floor 5)" in found
    assert any(line.startswith("nbagent.newroom is on no floor") for line in found)
    assert "nbagent.models.echo no longer imports nbagent.core.loop: remove it from KNOWN_UP" in found
