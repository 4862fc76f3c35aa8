"""The meter's magics in an in-process IPython shell: ``%inject``'s receipt, ``%agent context``,
``%agent context-limit`` and ``%agent status`` say the same numbers as the log (SPEC §12)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from kernel_helpers import ipython_shell, magics

from nbagent.log.events import RequestEstimate, parse_event


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NBAGENT_DB", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)


def test_receipt_context_and_status_agree_with_the_estimate(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import pandas as pd

    with ipython_shell() as sh:
        sh.user_ns["sales"] = pd.DataFrame({"region": ["north", "south"] * 50, "boxes": range(100)})
        sh.run_cell("%inject sales")
        receipt = int(re.search(r"~([\d,]+) tokens", capsys.readouterr().out).group(1).replace(",", ""))
        sh.run_cell("%agent context")
        context = capsys.readouterr().out
        assert re.search(rf"^  dataframe\s+{receipt:,}\s+\d+%$", context, flags=re.M), context
        assert re.search(rf"^\s+{receipt:,}  dataframe · sales \(next-step\)$", context, flags=re.M), context
        sh.run_cell("%followup --wait what sold most?")
        agent = magics(sh).session.agent
        [est] = [r for r in map(parse_event, agent.events) if isinstance(r, RequestEstimate)]
        assert est.by_source["dataframe"] == receipt
        capsys.readouterr()
        sh.run_cell("%agent status")
        status = capsys.readouterr().out
        assert f"tokens: 1 request · ≈{est.total:,} tokens sent" in status

        sh.run_cell("%agent context-limit block")
        assert "context-limit block" in capsys.readouterr().out
        assert agent.context_limit == "block"
        with pytest.raises(UsageError, match="warn or block"):
            magics(sh).agent("context-limit stop")


def test_status_tells_three_injections_of_one_frame_apart(capsys) -> None:  # type: ignore[no-untyped-def]
    """``%agent status`` names each pending frame by label, shape and capture cell, as the inbox
    widget does (issue #35 item 5): three ``%inject wine`` of different snapshots differ."""
    import pandas as pd

    with ipython_shell() as sh:
        for rows in (3, 5, 8):
            sh.user_ns["wine"] = pd.DataFrame({"alcohol": [12.5] * rows, "hue": [1.0] * rows})
            sh.run_cell("%inject wine", store_history=True)
        sh.run_cell("%agent status")
        status = capsys.readouterr().out
        pending = [line for line in status.splitlines() if line.startswith("pending: next step")]
        assert len(pending) == 3, status
        assert all("dataframe wine" in line and "pandas" in line and "tokens" in line for line in pending)
        assert [re.search(r"· (\d+)×2 ·", line).group(1) for line in pending] == ["3", "5", "8"]
        cells = [re.search(r"from In \[(\d+)\]", line).group(1) for line in pending]
        assert len(set(cells)) == 3, pending
        assert "<dataframe" not in status
