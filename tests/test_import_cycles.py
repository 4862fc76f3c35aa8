"""No import circles among nbagent's modules where the design says there are none (issue #18).

``scripts/import_cycles.py`` counts every import, type-only ones included. The core (agent, driver,
loop, inbox, journal, hooks, tool batch…) and the whole package must form no circle; the script is
tested on a circle it must find, so a passing check means something.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "import_cycles.py"


def _run(*targets: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, targets)], capture_output=True, text=True, check=False
    )


def test_the_core_has_no_import_circle_counting_type_only_imports() -> None:
    result = _run(ROOT / "nbagent" / "core")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("no import circles among ")


def test_the_whole_package_has_no_import_circle_counting_type_only_imports() -> None:
    result = _run(ROOT / "nbagent")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("no import circles among ")


def test_the_script_finds_a_circle_through_a_type_only_import(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.b import B\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\nclass B: ...\n"
    )
    (package / "c.py").write_text("def f():\n    from . import a\n")
    script = tmp_path / "scripts" / "import_cycles.py"
    script.parent.mkdir()
    script.write_text(SCRIPT.read_text())
    result = subprocess.run(
        [sys.executable, str(script), str(package)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 1
    assert result.stdout.strip() == "2 modules: pkg.a -> pkg.b -> pkg.a"
