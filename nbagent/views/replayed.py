"""A fork's replay in words (SPEC §11.2): "replay of turn 2: note seen by step 1, steer dropped",
from its ``session/replayed`` data (steps counted as every view counts them: "seen by step N")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def replayed_text(data: Mapping[str, Any]) -> str:
    """The words of one ``session/replayed`` record."""
    labels = data.get("labels") or {}
    name = lambda i: str(labels.get(i) or str(i)[:8])  # noqa: E731
    parts = [f"{name(i)} seen by step {int(k) + 1}" for i, k in (data.get("move") or {}).items()]
    parts += [f"{name(i)} dropped" for i in data.get("drop") or ()]
    for a in data.get("add") or ():
        if isinstance(a, Mapping):
            parts.append(f"{name(a.get('id'))} added, seen by step {int(a.get('step', 0)) + 1}")
    head = f"replay of turn {data.get('parent_turn', data.get('turn', '?'))}"
    return f"{head}: {', '.join(parts)}" if parts else f"{head}, unchanged"
