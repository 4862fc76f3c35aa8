"""What a caller's own Python costs many writers sharing commits (issue #20, item 3).

Run: ``python benchmarks/bench_ceiling_work.py [--rounds 12] [--work 0,10,20,30,40]``. 16 threads
each commit 8 rows through ``benchmarks/_ceiling.py`` (the journal's design with no nbagent in it),
after spinning ``W`` µs of pure Python before every commit, as nbagent's callers plan, validate and
encode before theirs. One bare committer (``BEGIN IMMEDIATE; INSERT; COMMIT``) runs in the same
rounds, on the same file, with ``synchronous=FULL``. Prints one row per ``W``: rows/s and the ratio
to the bare committer. Read the ratio beside nbagent's own in ``run.py --only throughput``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import threading
import time
from pathlib import Path

from _ceiling import BareGroupCommit

THREADS, PER_THREAD = 16, 8
DATA = '{"text": "' + "x" * 300 + '"}'
SCHEMA = (
    "CREATE TABLE events (session_id, seq, time, type, data, inbox_pending, PRIMARY KEY (session_id, seq))"
)


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def spin(microseconds: float) -> None:
    """Pure Python for ``microseconds`` (holding the GIL, as planning and encoding do)."""
    end = time.perf_counter() + microseconds / 1e6
    while time.perf_counter() < end:
        pass


def threads_round(ceiling: BareGroupCommit, work: float, seqs: object) -> float:
    barrier = threading.Barrier(THREADS + 1)

    def writer() -> None:
        barrier.wait()
        for _ in range(PER_THREAD):
            spin(work)
            ceiling.commit(("s", next(seqs), 0, "k", DATA, 1))  # type: ignore[call-overload]

    threads = [threading.Thread(target=writer) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started


def bare_round(conn: sqlite3.Connection, seqs: object) -> float:
    started = time.perf_counter()
    for _ in range(THREADS):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", ("bare", next(seqs), 0, "k", DATA, 1))  # type: ignore[call-overload]
        conn.execute("COMMIT")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--work", default="0,10,20,30,40", help="µs of Python per commit, comma-separated")
    args = parser.parse_args()
    works = [float(w) for w in args.work.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ceiling.db"
        bare = connect(path)
        bare.execute(SCHEMA)
        ceilings = {w: BareGroupCommit(connect(path)) for w in works}
        seqs, bare_seqs = iter(range(1 << 62)), iter(range(1 << 62))
        spent = dict.fromkeys(works, 0.0)
        bare_time = 0.0
        for _ in range(args.rounds):
            bare_time += bare_round(bare, bare_seqs)
            for w in works:
                spent[w] += threads_round(ceilings[w], w, seqs)
        bare_rate = args.rounds * THREADS / bare_time
        print(f"one bare committer: {bare_rate:,.0f}/s; load average {os.getloadavg()[0]:.1f}")
        print(f"{'Python per commit':>18}  {'16 threads':>10}  {'vs bare':>7}")
        for w in works:
            rate = args.rounds * THREADS * PER_THREAD / spent[w]
            print(f"{w:>15.0f} µs  {rate:>8,.0f}/s  {rate / bare_rate:>6.2f}x")
        for ceiling in ceilings.values():
            ceiling.conn.close()
        bare.close()


if __name__ == "__main__":
    main()
