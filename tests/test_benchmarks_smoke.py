"""Smoke test of ``benchmarks/run.py``: the script runs end to end at tiny sizes. Speed is never asserted."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import nbagent
from nbagent.testing import check_invariants

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def test_run_py_tiny(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "--tiny", "--no-assert", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout
    for metric in ("inject p50", "inject throughput", "loop step", "resume ready", "cold start"):
        assert metric in out, out
    assert "met?" in out.splitlines()[1]


def test_synthetic_history_is_a_valid_log(tmp_path: Path) -> None:
    """The rows the benchmarks write directly must form a log nbagent resumes and replays."""
    sys.path.insert(0, str(BENCH))
    try:
        import _util
    finally:
        sys.path.remove(str(BENCH))
    path = tmp_path / "h.db"
    sid, count = _util.write_history(str(path), 60)

    async def main() -> None:
        agent = nbagent.resume_session(path, sid)
        events = agent.events
        assert len(events) == count
        check_invariants(events, inbox=agent.inbox)
        assert len(agent.driver.history()) == 4 * (count // 17)
        assert not agent.inbox.has_pending
        await agent.close()

    asyncio.run(main())


def test_bench_fork_tiny(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "bench_fork.py"), "--tiny", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    for metric in ("fork of a", "replay plan of a", "diff of two"):
        assert metric in proc.stdout, proc.stdout


def test_bench_attribution_tiny(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "bench_attribution.py"), "--tiny", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "attribution of a 3-item turn (echo)" in proc.stdout and "rebuild from the store" in proc.stdout


def test_bench_listing_tiny() -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "bench_listing.py"), "--tiny", "--sqlite-only"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]  # (it exits 1 when the labels differ)
    for how in ("sqlite: per entry (baseline)", "sqlite: one reader", "sqlite: remembered"):
        assert how in proc.stdout, proc.stdout
