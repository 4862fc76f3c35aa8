"""Before/after under the same load: ``python benchmarks/compare.py --against DIR [--runs N] -- ARGS``.

Runs this checkout's ``benchmarks/run.py ARGS --json …`` (or ``--script bench_postgres.py``) against
this checkout's nbagent and against the one in ``DIR`` (e.g. ``git worktree add /tmp/before
<commit>``) alternately, each in a fresh interpreter with that nbagent first on ``PYTHONPATH`` (the
same measuring code on both sides), ``N`` times each; then prints, per
metric, the median value and the median ratio (to the metric's own baseline, measured in the same
run) on each side. On a shared machine whose disk and CPUs drift several-fold within a minute,
alternating runs and comparing ratios is what makes the two sides comparable.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _util import fmt

HERE = Path(__file__).resolve().parent.parent


def one_run(root: Path, script: str, args: list[str]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        env = {**os.environ, "PYTHONPATH": str(root)}
        subprocess.run(
            [sys.executable, str(HERE / "benchmarks" / script), *args, "--no-assert", "--json", str(out)],
            env=env,
            cwd=tmp,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, metavar="DIR", help="the other checkout (before)")
    parser.add_argument("--runs", type=int, default=3, help="runs on each side, alternating")
    parser.add_argument("--script", default="run.py", help="run.py (default) or bench_postgres.py")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="-- then the benchmark's arguments")
    ns = parser.parse_args(argv)
    args = [a for a in ns.args if a != "--"]
    sides = {"before": Path(ns.against).resolve(), "after": HERE}
    runs: dict[str, list[list[dict[str, Any]]]] = {side: [] for side in sides}
    loads = []
    for _ in range(ns.runs):
        for side, root in sides.items():
            loads.append(os.getloadavg()[0])
            runs[side].append(one_run(root, ns.script, args))
    metrics: list[str] = []
    for side_runs in runs.values():
        for rows in side_runs:
            metrics += [r["metric"] for r in rows if r["metric"] not in metrics]
    print(
        f"{ns.script} {' '.join(args)}: {ns.runs} alternating runs per side; load average "
        f"{min(loads):.1f}–{max(loads):.1f} (2 CPUs)"
    )
    head = f"{'metric':<42} {'before':>10} {'ratio':>7} {'after':>10} {'ratio':>7}"
    print(head + "\n" + "-" * len(head))
    for metric in metrics:
        cells = []
        for side in sides:
            rows = [r for rs in runs[side] for r in rs if r["metric"] == metric]
            if not rows:
                cells += ["-", "-"]
                continue
            value = statistics.median(r["value"] for r in rows)
            ratios = [r["ratio"] for r in rows if r.get("ratio") is not None]
            cells += [fmt(value, rows[0]["unit"]), f"{statistics.median(ratios):.2f}x" if ratios else "-"]
        print(f"{metric:<42} {cells[0]:>10} {cells[1]:>7} {cells[2]:>10} {cells[3]:>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
