"""The Agent sessions panel's listing of a database or file, as the lab server answers it (SPEC §9.6):
200 sessions without a title (each labelled by its first prompt) and 20 forks (each by its lineage).

Run: ``python benchmarks/bench_listing.py [--sessions N] [--forks N] [--tiny] [--sqlite-only]``. For a SQLite file and,
where a PostgreSQL server can be started here (``tests/pg_server.py``), a database, it times in the
same run:

- **per entry**: the labels read as the listing read them before ``labserver.labels`` (a reader
  opened per untitled session and per fork) — the baseline;
- **one reader**: the server's first listing (one reader per file for the page's labels);
- **remembered**: every later listing of the same server (a panel re-listing an open database every
  3 s): only the ``sessions()`` query, the labels remembered.

Prints a table of medians and the ratio to the baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import nbagent
from nbagent.labserver.labels import NO_LINEAGE, Labels, read_lineage
from nbagent.labserver.listing import listing_page
from nbagent.labserver.sessions import PROMPT_SCAN, Readable, first_prompt
from nbagent.models import ScriptedModel
from nbagent.store.budget import Budget, bounded
from nbagent.store.location import PostgresLocation, parse_location
from nbagent.store.opening import open_reader
from nbagent.store.reading import list_sessions, read_events

REPEATS = 7


async def write(where: str, sessions: int, forks: int) -> None:
    ids = []
    for i in range(sessions):
        agent = nbagent.open_session(where, model=ScriptedModel(["ok"]))
        await agent.run(f"question {i}")
        ids.append(agent.session_id)
        await agent.close()
    for sid in ids[:forks]:
        child = nbagent.fork_session(where, sid, before_turn=1, model=ScriptedModel(["again"]))
        await child.run("once more")
        await child.close()


def per_entry(path: Readable) -> list[tuple[str, Any]]:
    """The labels read one reader per entry (the listing before ``labserver.labels``)."""
    with bounded(Budget()):
        rows = list_sessions(path)
    out = []
    for row in rows:
        with bounded(Budget()):
            prompt = "" if row.title else first_prompt(read_events(path, row.id, limit=PROMPT_SCAN))
        lineage = NO_LINEAGE
        if row.parent:
            with bounded(Budget()):
                reader = open_reader(path)
                try:
                    lineage = read_lineage(reader, row.id)
                finally:
                    reader.close(checkpoint=False)
        out.append((prompt, lineage))
    return out


def median_ms(fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def measure(name: str, where: str, sessions: int, forks: int) -> list[tuple[str, float, float]]:
    asyncio.run(write(where, sessions, forks))
    location = parse_location(where)
    path: Readable = location if isinstance(location, PostgresLocation) else location.path
    served = Labels()

    def listing(labels: Labels | None) -> Callable[[], Any]:
        return lambda: listing_page([(path, name)], Budget, labels=labels)

    first = listing(served)()  # the server's first listing: from here on it remembers
    shown = sorted(((e["first_prompt"], (e["purpose"], e["replay_text"])) for e in first.entries), key=repr)
    if shown != sorted(per_entry(path), key=repr):
        raise SystemExit(f"{name}: the listing's labels differ from those read entry by entry")
    base = median_ms(lambda: per_entry(path))
    cold = median_ms(listing(None))  # a fresh Labels each time: what a server's first listing costs
    warm = median_ms(listing(served))
    return [(f"{name}: per entry (baseline)", base, 1.0), (f"{name}: one reader", cold, cold / base),
            (f"{name}: remembered", warm, warm / base)]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--forks", type=int, default=20)
    parser.add_argument("--tiny", action="store_true", help="10 sessions and 2 forks: a smoke run")
    parser.add_argument("--sqlite-only", action="store_true", help="no PostgreSQL run")
    args = parser.parse_args()
    if args.tiny:
        args.sessions, args.forks = 10, 2
    rows: list[tuple[str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        rows += measure("sqlite", str(Path(tmp) / "list.nbagent.sqlite"), args.sessions, args.forks)
    import pg_server

    reason = "--sqlite-only" if args.sqlite_only else pg_server.unavailable_reason()
    if reason:
        print(f"postgresql: skipped ({reason})")
    else:
        with pg_server.Cluster() as cluster:
            rows += measure("postgresql", cluster.url(), args.sessions, args.forks)
    print(f"listing {args.sessions} untitled sessions and {args.forks} forks, median of {REPEATS}")
    print(f"{'how':<36} {'ms':>9} {'ratio':>7}")
    for how, ms, ratio in rows:
        print(f"{how:<36} {ms:>9.1f} {ratio:>6.2f}x")


if __name__ == "__main__":
    main()
