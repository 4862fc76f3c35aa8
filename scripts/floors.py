"""The floor rule of docs/architecture.md: ``python scripts/floors.py`` prints every import that runs
up a floor and exits 1 if there is one the list below does not name.

Every import counts, wherever it stands (``scripts/import_cycles.py`` reads them). A module's floor is
that of its longest listed prefix; a module on no listed floor is an error too, so a new top-level
room has to be placed on a floor when it is added.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from import_cycles import ROOT, graph

FLOORS: dict[str, int] = {
    "nbagent._json": 1,
    "nbagent._version": 1,
    "nbagent.errors": 1,
    "nbagent.units": 1,
    "nbagent.redaction": 1,
    "nbagent.redaction_known": 1,
    "nbagent.log": 2,
    "nbagent.models": 3,
    "nbagent.core": 4,
    "nbagent.mcp": 4,
    "nbagent.views": 5,
    "nbagent.store": 5,
    "nbagent.usage": 5,
    "nbagent.labserver": 6,
    "nbagent.widgets": 6,
    "nbagent.context": 6,
    "nbagent.forks": 6,
    "nbagent.session": 6,
    "nbagent.agent": 6,
    "nbagent.testing": 6,
    "nbagent.notebook": 7,
    "nbagent.__main__": 8,
    "nbagent": 8,
}
"""The floors as docs/architecture.md draws them (a package's modules share its floor)."""

KNOWN_UP: set[tuple[str, str]] = set()
"""Arrows up that are known and still to be removed (none since issue #30 gave the log its leaf
package under the models). Nothing may be added here; an entry that no longer holds is reported."""


def floor_of(module: str) -> int | None:
    if module == "nbagent":  # the package's own __init__; its other top-level modules are listed
        return FLOORS[module]
    name = module
    while name != "nbagent":
        if name in FLOORS:
            return FLOORS[name]
        name = name.rpartition(".")[0]
    return None


def problems(root: Path = ROOT) -> list[str]:
    """Each import running up a floor (not in ``KNOWN_UP``), each unplaced module, each stale entry."""
    edges = graph([root / "nbagent"], root)
    found: list[str] = []
    seen_known: set[tuple[str, str]] = set()
    for module, targets in sorted(edges.items()):
        here = floor_of(module)
        if here is None:
            found.append(f"{module} is on no floor: place it in scripts/floors.py and docs/architecture.md")
            continue
        for target in sorted(targets):
            there = floor_of(target)
            if there is None or there <= here:
                continue
            if (module, target) in KNOWN_UP:
                seen_known.add((module, target))
                continue
            found.append(f"{module} (floor {here}) imports {target} (floor {there})")
    found += [f"{a} no longer imports {b}: remove it from KNOWN_UP" for a, b in sorted(KNOWN_UP - seen_known)]
    return found


def main() -> int:
    found = problems()
    for line in found:
        print(line)
    if not found:
        print(f"no import runs up a floor ({len(KNOWN_UP)} known arrows up, listed in scripts/floors.py)")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
