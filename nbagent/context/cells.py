"""Literal context text typed into a cell (``%inject TEXT``, ``%%inject``): sent verbatim, never wrapped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nbagent.log.messages import UserMessage


def cell_text(text: str, *, label: str | None = None, cell: Mapping[str, Any] | None = None) -> UserMessage:
    """A ``cell`` message holding ``text`` exactly as given, with the optional label and cell in its source."""
    if not isinstance(text, str):
        raise TypeError(f"cell_text needs a str, got {type(text).__name__}")
    source: dict[str, Any] = {"kind": "cell"}
    if label is not None:
        source["label"] = label
    if cell is not None:
        source["cell"] = dict(cell)
    return UserMessage.text(text, source=source)
