"""Smoke test of ``benchmarks/bench_pg_scale.py`` (PostgreSQL behind PgBouncer at a hub's scale): the
harness runs end to end at a tiny size — writers, a follower, a kill -9, restarts of PgBouncer and
PostgreSQL — and its chaos check finds nothing lost. Speed is never asserted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pg_bouncer
import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_pg_scale.py"


def test_bench_pg_scale_tiny() -> None:
    reason = pg_bouncer.unavailable_reason()
    if reason:
        if os.environ.get("NBAGENT_REQUIRE_POSTGRES"):
            pytest.fail(reason)
        pytest.skip(reason)
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--tiny", "--no-assert"], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    lines = proc.stdout.splitlines()
    assert lines[1].split()[:3] == ["sessions", "injects/s", "inject"], proc.stdout
    assert lines[2].split()[0] == "4"
    chaos = next(line for line in lines if "acknowledged deliveries" in line)
    assert ": 0 lost, 0 stored twice, 0 sessions with two writers interleaved" in chaos, proc.stdout
    assert int(chaos.split()[0]) > 0  # deliveries were acknowledged and checked
