"""Speed of the built-in notebook tools (SPEC §9.4): the hand-over to the kernel's main thread and the
tool bodies.

Run: ``python benchmarks/bench_kernel_tools.py [--calls N] [--rows N]``. Prints one table:

- in a real kernel (jupyter_client): the round trip of ``await main_thread.call(noop)`` from the agent
  loop while the main thread is idle between cells, and while a cell blocks in a wait that serves it,
  against a plain thread hop (``ThreadPoolExecutor.submit`` awaited from the same loop);
- in an in-process IPython shell: ``list_variables`` over 1,000 variables, ``describe_variable`` of a
  1M-row frame against ``nbagent.context.dataframe`` of the same frame (the same code, so about 1×),
  and ``run_code("x = 1")`` against a bare ``exec``.

Compare ratios: the machine is shared and its figures drift. Speed is never asserted in the tests.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

KERNEL_TIMING = """
import asyncio, concurrent.futures, json, time
from nbagent.notebook import current_kernel_session
_ks = current_kernel_session()
_pool = concurrent.futures.ThreadPoolExecutor(1)

async def _timed(n, hop):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await hop()
        out.append(time.perf_counter() - t)
    return out

def _main_hop():
    return _ks.main_thread.call(lambda: None)

def _thread_hop():
    return asyncio.wrap_future(_pool.submit(lambda: None))
"""


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def in_kernel(calls: int) -> dict[str, float]:
    """Round trips measured inside a real kernel, as the agent loop sees them."""
    from jupyter_client import KernelManager

    with tempfile.TemporaryDirectory() as cwd:
        km = KernelManager(kernel_name="python3")
        km.start_kernel(cwd=cwd)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        out: dict[str, Any] = {}

        def run(code: str) -> str:
            parts: list[str] = []

            def hook(msg: dict[str, Any]) -> None:
                if msg["msg_type"] == "stream":
                    parts.append(msg["content"]["text"])
                elif msg["msg_type"] == "error":
                    raise RuntimeError(f"{msg['content']['ename']}: {msg['content']['evalue']}")

            kc.execute_interactive(code, timeout=300, output_hook=hook)
            return "".join(parts)

        try:
            run("%load_ext nbagent")
            run(KERNEL_TIMING)
            # idle: the cell returns at once and the kernel's loop serves the hand-overs between cells
            run(f"_idle = _ks.agent_loop.submit(_timed({calls}, _main_hop))")
            time.sleep(2 + calls / 100)  # no cell runs meanwhile: every hand-over is served between cells
            if run("print(_idle.done())").strip() != "True":
                raise RuntimeError("the idle hand-overs did not finish while no cell ran; pass fewer --calls")
            out["idle"] = json.loads(run("print(json.dumps(_idle.result()))"))
            # waiting: a cell blocks in the wait that serves the main thread's queue
            out["wait"] = json.loads(
                run(f"print(json.dumps(_ks.wait(_ks.agent_loop.submit(_timed({calls}, _main_hop)))[0]))")
            )
            out["thread"] = json.loads(
                run(f"print(json.dumps(_ks.wait(_ks.agent_loop.submit(_timed({calls}, _thread_hop)))[0]))")
            )
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    return {k: median_ms(v) for k, v in out.items()}


def best_of(fn: Callable[[], Any], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return median_ms(samples)


def in_process(rows: int, repeats: int) -> list[tuple[str, float, str, float]]:
    import numpy as np
    import pandas as pd
    from IPython.core.interactiveshell import InteractiveShell

    from nbagent.context import dataframe
    from nbagent.notebook.tools.code_runner import run_code
    from nbagent.notebook.tools.namespace_view import describe_text, list_variables_text

    shell = InteractiveShell.instance()
    ns, hidden = shell.user_ns, shell.user_ns_hidden
    rng = np.random.default_rng(0)
    for i in range(1000):
        ns[f"v{i}"] = [i] * 50 if i % 3 else {"k": i, "values": list(range(20))}
    for i in range(10):
        ns[f"frame{i}"] = pd.DataFrame(rng.normal(size=(1000, 8)))
    ns["big"] = pd.DataFrame({f"c{i}": rng.normal(size=rows) for i in range(20)})
    rows_out = [
        (
            "list_variables, 1,011 variables",
            best_of(lambda: list_variables_text(ns, hidden), repeats),
            "repr() of each",
            best_of(lambda: [repr(v) for v in list(ns.values())], repeats),
        ),
        (
            f"describe_variable, {rows:,}×20 frame",
            best_of(lambda: describe_text(ns, hidden, "big"), repeats),
            "context.dataframe (as %inject)",
            best_of(lambda: dataframe(ns["big"], name="big"), repeats),
        ),
        (
            "run_code('x = 1')",
            best_of(lambda: run_code("x = 1", ns, transform=shell.transform_cell), repeats * 20),
            "exec('x = 1')",
            best_of(lambda: exec("x = 1", ns), repeats * 20),
        ),
    ]
    return rows_out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="hand-overs timed per case")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the frame to describe")
    parser.add_argument("--repeats", type=int, default=5, help="repetitions of each tool body")
    args = parser.parse_args(argv)
    kernel = in_kernel(args.calls)
    rows = [
        ("hand-over, main thread idle", kernel["idle"], "thread hop", kernel["thread"]),
        ("hand-over, during a wait", kernel["wait"], "thread hop", kernel["thread"]),
        *in_process(args.rows, args.repeats),
    ]
    print(f"{'metric':<40} {'median ms':>10}  {'baseline':<32} {'ms':>9} {'ratio':>7}")
    for name, value, base_name, base in rows:
        print(f"{name:<40} {value:>10.3f}  {base_name:<32} {base:>9.3f} {value / base:>6.1f}×")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main())
