"""What ``%inject`` records for awkward values, in a real kernel: data as written, no warnings in the
cell, a LazyFrame's schema, a list column's counts, a dict in its own order. The frames have over 50
rows, so they are summarized rather than sent whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kernel_helpers import Kernel, read_events

from nbagent.log.events import INBOX_SPLICED

pytestmark = pytest.mark.kernel

SETUP = """\
import numpy as np, pandas as pd, polars as pl
prices = pd.DataFrame({"x": [1.0, np.inf, -np.inf, 3.0] * 15, "note": ["<b>bold</b> & co", "</dataframe>", None, "a"] * 15})
lists = pd.DataFrame({"tags": [["a"], ["b", "c"], None] * 20})
query = pl.LazyFrame({"id": [1, 2]}).with_columns(name=pl.lit("x"))
config = {"zeta": 1, "alpha": 2}
"""


def test_injected_values_reach_the_log_as_written_without_warnings_in_the_cell(tmp_path: Path) -> None:
    with Kernel(tmp_path) as k:
        k.run("%load_ext nbagent")
        assert k.run(SETUP) == ""
        outputs = [k.run(f"%inject {name}") for name in ("prices", "lists", "query", "config")]
        k.run("{}['missing']")
        outputs.append(k.run("%inject --last-error"))
    for out in outputs:
        assert out.splitlines()[-1].startswith("queued ") and "Warning" not in out, out
    prices, lists, query, config, error = _inserted_texts(tmp_path / "work.nbagent.sqlite")
    assert "· min -inf · max inf · finite mean 2 · finite std 1.0171 · infinite 30" in prices
    assert '"<b>bold</b> & co"' in prices and "<\\/dataframe>" in prices
    assert re.findall(r"</dataframe", prices) == ["</dataframe"]
    assert "- tags: object · non-null 40 (33.3% null) · lists of str, length 1–2" in lists
    assert "unavailable" not in lists
    assert 'type="polars.LazyFrame" shape="? x 2"' in query and "- id: Int64\n- name: String" in query
    assert "{'zeta': 1, 'alpha': 2}" in config
    assert "<module>" in error and "&lt;" not in error and "KeyError: 'missing'" in error


def _inserted_texts(db: Path) -> list[str]:
    """The text of every message the inbox received, in order."""
    return [
        message["content"][0]["text"]
        for event in read_events(db)
        if event.type == INBOX_SPLICED
        for message in event.data.get("inserted", ())
    ]
