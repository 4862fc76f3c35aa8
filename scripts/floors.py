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
    "nbagent.models": 2,
    "nbagent.core": 3,
    "nbagent.mcp": 3,
    "nbagent.views": 4,
    "nbagent.store": 4,
    "nbagent.usage": 4,
    "nbagent.labserver": 5,
    "nbagent.widgets": 5,
    "nbagent.context": 5,
    "nbagent.forks": 5,
    "nbagent.session": 5,
    "nbagent.agent": 5,
    "nbagent.testing": 5,
    "nbagent.notebook": 6,
    "nbagent.__main__": 7,
    "nbagent": 7,
}
"""The floors as docs/architecture.md draws them (a package's modules share its floor)."""

KNOWN_UP = {
    ("nbagent.models.base", "nbagent.core.messages"),
    ("nbagent.models.echo", "nbagent.core.messages"),
    ("nbagent.models._openai_wire", "nbagent.core.messages"),
    ("nbagent.models._anthropic_wire", "nbagent.core.messages"),
}
"""Arrows up that are known and still to be removed (issue #30: messages move to a leaf package
under the models). Nothing may be added here; an entry that no longer holds is reported."""


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
