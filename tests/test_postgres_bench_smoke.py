"""Smoke test of ``benchmarks/bench_postgres.py``: it runs end to end at tiny sizes. Speed is never asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_postgres.py"


def test_bench_postgres_tiny(pg_cluster) -> None:
    url = pg_cluster.url(schema="bench_smoke")
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--tiny", "--no-assert", "--url", url],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    assert lines[1].split() == ["metric", "value", "baseline", "ratio", "target", "met?"]
    for metric in ("inject p50", "loop step (durable)", "resume ready", "resume materialize all"):
        assert any(line.startswith(metric) for line in lines), proc.stdout
