"""Literal context text typed into a cell (``%inject TEXT``, ``%%inject``): sent verbatim, never wrapped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from nbagent.log.messages import CellRef, CellSource, UserMessage


def cell_text(text: str, *, label: str | None = None, cell: Mapping[str, Any] | None = None) -> UserMessage:
    """A ``cell`` message holding ``text`` exactly as given, with the optional label and cell in its source."""
    if not isinstance(text, str):
        raise TypeError(f"cell_text needs a str, got {type(text).__name__}")
    source: CellSource = {"kind": "cell"}
    if label is not None:
        source["label"] = label
    if cell is not None:
        source["cell"] = cast(CellRef, dict(cell))  # a cell's {execution_count, cell_id}
    return UserMessage.text(text, source=source)
