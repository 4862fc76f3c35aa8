"""The one hostile corpus (``tests/hostile.json``): text that would run script, load an image, make
a link or change the markup if an output path treated data as HTML or Markdown. Every payload sets
``window.__nbagent_xss`` to its id. Python tests and the browser tests read it from here."""

from __future__ import annotations

import json
from pathlib import Path

_DATA = json.loads((Path(__file__).with_name("hostile.json")).read_text(encoding="utf-8"))
FLAG: str = _DATA["flag"]
ITEMS: dict[str, str] = {item["id"]: item["text"] for item in _DATA["items"]}
"""Payload id → text."""
FLAG_JS = f"() => {FLAG} === undefined ? null : {FLAG}"
"""A page's flag: ``None`` unless some payload ran."""


def same_text(text: str) -> str:
    """``text`` with every whitespace run as one space: how a page shows it, lines or not."""
    return " ".join(text.split())
