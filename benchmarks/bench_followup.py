"""What ``%followup --wait`` costs over a ``pass`` cell in a real kernel, with the offline echo model.

Run: ``python benchmarks/bench_followup.py [--cells N] [--synchronous OFF] [--against DIR] [--profile]``. A kernel (jupyter_client,
ipykernel) loads the extension and opens a session beside a pretend notebook; then ``pass`` cells and
``%followup --wait hi`` cells alternate, each timed from the client (execute request sent → the
kernel's ``idle`` status for it: what a user waits for) and inside the kernel (the cell's own run,
from ``pre_run_cell`` to ``post_run_cell``). The session's transactions per followup are counted
through the store. ``--profile`` also profiles the kernel's main thread and the agent loop's thread
(cProfile, one profiler per thread) over the followup cells and prints the top functions.

Compare the difference to the ``pass`` cell, not absolute values: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

SETUP = """
import time as _t, cProfile as _cp, pstats as _ps, io as _io
from nbagent.notebook import current_kernel_session as _cks
_ks = _cks()
_cell = {"t0": 0.0, "times": []}
def _pre(info):
    _cell["t0"] = _t.perf_counter()
def _post(result):
    _cell["times"].append((result.info.raw_cell, _t.perf_counter() - _cell["t0"]))
get_ipython().events.register("pre_run_cell", _pre)
get_ipython().events.register("post_run_cell", _post)
"""

COUNT_WRITES = """
_agent = _ks.ensure()
_writes = []
_store = _agent.driver.journal.file
_real_write = _store.write
def _counting_write(rows, **kw):
    _real_write(rows, **kw)
    _writes.append([r[3] for r in rows])
_store.write = _counting_write
"""

PROFILE_ON = """
_prof_main, _prof_loop = _cp.Profile(), _cp.Profile()
_ks.wait(_ks.agent_loop.call(_prof_loop.enable))
_prof_main.enable()
"""

PROFILE_OFF = """
_prof_main.disable()
_ks.wait(_ks.agent_loop.call(_prof_loop.disable))
def _top(p, n):
    s = _io.StringIO()
    st = _ps.Stats(p, stream=s)
    st.sort_stats("tottime").print_stats(n)
    st.sort_stats("cumulative").print_stats("nbagent|display|iostream|session.py", n)
    return s.getvalue()
print("== main thread ==")
print(_top(_prof_main, 30))
print("== agent loop thread ==")
print(_top(_prof_loop, 30))
"""


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


class BenchKernel:
    """A kernel running nbagent from ``root`` with the extension loaded and a session open."""

    def __init__(self, root: Path, cwd: str, synchronous: str | None) -> None:
        from jupyter_client import KernelManager

        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
        }
        env["NBAGENT_DB"] = str(Path(cwd) / "bench.nbagent.sqlite")
        if synchronous:
            env["NBAGENT_SYNCHRONOUS"] = synchronous
        self.root = root
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(cwd=cwd, env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.printed: list[str] = []
        self.client: dict[str, list[float]] = {"pass": [], "followup": []}

    def run(self, code: str) -> float:
        def hook(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream":
                self.printed.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                raise RuntimeError(f"{msg['content']['ename']}: {msg['content']['evalue']}")

        t0 = time.perf_counter()
        self.kc.execute_interactive(code, timeout=300, output_hook=hook)
        return time.perf_counter() - t0

    def value(self, expr: str) -> Any:
        self.printed.clear()
        self.run(f"print(__import__('json').dumps({expr}))")
        return json.loads("".join(self.printed))

    def prepare(self) -> None:
        self.run("%load_ext nbagent")
        self.run(SETUP)
        self.run("%followup --wait warm up")  # opens the session; imports the views
        self.run(COUNT_WRITES)
        for _ in range(3):
            self.run("pass")
            self.run("%followup --wait warm up")
        self.value("_cell['times'].clear() or _writes.clear() or 0")

    def pair(self) -> None:
        self.client["pass"].append(self.run("pass"))
        self.client["followup"].append(self.run("%followup --wait hi"))

    def results(self, report: str = "") -> dict[str, Any]:
        times = self.value("_cell['times']")
        kernel = {
            "pass": [t for cell, t in times if cell == "pass"],
            "followup": [t for cell, t in times if cell == "%followup --wait hi"],
        }
        return {"client": self.client, "kernel": kernel, "writes": self.value("_writes"), "report": report}

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def run_cells(cells: int, profile: bool, synchronous: str | None, roots: list[Path]) -> list[dict[str, Any]]:
    """``cells`` pairs of cells in a kernel per root, the kernels taking turns pair by pair."""
    with tempfile.TemporaryDirectory() as base:
        kernels: list[BenchKernel] = []
        try:
            for i, root in enumerate(roots):
                cwd = Path(base) / str(i)
                cwd.mkdir()
                kernels.append(BenchKernel(root, str(cwd), synchronous))
            for k in kernels:
                k.prepare()
                if profile:
                    k.run(PROFILE_ON)
            for _ in range(cells):
                for k in kernels:
                    k.pair()
            out = []
            for k in kernels:
                report = ""
                if profile:
                    k.printed.clear()
                    k.run(PROFILE_OFF)
                    report = "".join(k.printed)
                out.append(k.results(report))
            return out
        finally:
            for k in kernels:
                k.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=60, help="cells of each kind")
    parser.add_argument("--profile", action="store_true", help="profile the kernel's two threads too")
    parser.add_argument(
        "--synchronous",
        choices=["FULL", "NORMAL", "OFF"],
        help="NBAGENT_SYNCHRONOUS for the kernel (OFF shows the cost without the commits' fsyncs)",
    )
    parser.add_argument(
        "--against",
        metavar="DIR",
        help="also run a kernel on the nbagent checkout in DIR (e.g. a `git worktree` of an older "
        "commit), its cells taking turns with this one's: a before/after under the same load",
    )
    args = parser.parse_args(argv)
    roots = [ROOT] + ([Path(args.against).resolve()] if args.against else [])
    outs = run_cells(args.cells, args.profile, args.synchronous, roots)
    sync = args.synchronous or os.environ.get("NBAGENT_SYNCHRONOUS", "FULL")
    print(
        f"%followup --wait vs pass, {args.cells} cells each, echo model, synchronous={sync}; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'nbagent from':<24} {'measure (median)':<28} {'pass ms':>8} {'followup ms':>12} {'added ms':>9} "
        f"{'mean added':>10} {'p90 added':>9} {'txns':>5}"
    )
    for root, out in zip(roots, outs):
        per_followup = len(out["writes"]) / args.cells
        for name, d in (("client round trip", out["client"]), ("in the kernel, pre→post run", out["kernel"])):
            p, f = median_ms(d["pass"]), median_ms(d["followup"])
            mean = (statistics.mean(d["followup"]) - statistics.mean(d["pass"])) * 1000
            p90 = (
                statistics.quantiles(d["followup"], n=10)[-1] - statistics.quantiles(d["pass"], n=10)[-1]
            ) * 1000
            print(
                f"{str(root)[-24:]:<24} {name:<28} {p:>8.2f} {f:>12.2f} {f - p:>9.2f} {mean:>10.2f} {p90:>9.2f} "
                f"{per_followup:>5g}"
            )
    for root, out in zip(roots, outs):
        if out["report"]:
            print(f"== profile, nbagent from {root}")
            print(out["report"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
