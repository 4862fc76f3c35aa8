"""A hub's worth of sessions on one PostgreSQL behind PgBouncer:
``python benchmarks/bench_pg_scale.py [--sessions 10,100,1000] [--procs 4] [--seconds 20] [--chaos]``.

A throwaway server (``fsync`` on) and a PgBouncer in transaction mode in front of it
(``tests/pg_server.py``, ``tests/pg_bouncer.py``). For each session count N, ``--procs`` writer
processes each open their share of N sessions through PgBouncer (many asyncio agents per process,
one connection pool each) and then ``inject()`` into them in turn; beside every tenth inject each
writer times a bare one-row ``INSERT`` (its own transaction) through the same PgBouncer on a psycopg
connection of its own. Writers offer ``--rate`` injects per second in all (default 150: each of
1,000 sessions every 6.7 s; ``--rate 0`` writes flat out, which on 2 cores measures CPU saturation) — the baseline, in the same run, under the same load. One follower process,
standing for a Jupyter server (pool of 1, one ``LISTEN`` on the server itself), follows all N
sessions with ``follow_events`` and times each event from its ``time`` to its arrival.

With ``--chaos`` the run also kills one writer with SIGKILL (a new one resumes its sessions), then
restarts PgBouncer, then PostgreSQL, while everyone writes; afterwards every acknowledged delivery
must be in its session's log exactly once, and no session may show appends of two writers
interleaved (one writer, then the next, never back).

Prints one table per run and exits 1 when a target is missed (unless ``--no-assert``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _util import median, pct  # noqa: E402

TEXT = "Context: df_sales was reloaded (4 columns, 1,204 rows); the 'growth' column is a float."


# -- the writer process -------------------------------------------------------------------------


async def writer(args: argparse.Namespace) -> None:
    import psycopg

    import nbagent

    out = open(args.out, "a", buffering=1)  # noqa: SIM115 - written to until the process ends
    ids = args.resume.split(",") if args.resume else []
    agents = [nbagent.resume_session(args.url, sid) for sid in ids]
    agents += [nbagent.open_session(args.url) for _ in range(args.count)]
    for agent in agents:
        out.write(f"session {agent.session_id}\n")
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # "go"
    bare = psycopg.connect(args.bare_url, autocommit=True, prepare_threshold=None)
    stop = time.monotonic() + args.seconds
    due = time.monotonic()
    i = 0
    while time.monotonic() < stop:
        agent = agents[i % len(agents)]
        i += 1
        t0 = time.perf_counter()
        try:
            message = agent.inject(TEXT)
        except nbagent.NbagentError as exc:
            out.write(f"error {agent.session_id} {type(exc).__name__}\n")
            await asyncio.sleep(0.05)
            continue
        dt = time.perf_counter() - t0
        out.write(f"ack {agent.session_id} {message.id} {agent.events[-1].seq} {os.getpid()} {dt:.6f}\n")
        if i % 10 == 0:
            t0 = time.perf_counter()
            try:
                bare.execute("INSERT INTO bench_bare VALUES (%s, %s)", (os.getpid(), TEXT))
                out.write(f"bare {time.perf_counter() - t0:.6f}\n")
            except psycopg.Error:
                bare = _reconnect(args.bare_url)
        due += args.pause
        await asyncio.sleep(max(0.0, due - time.monotonic()))
    for agent in agents:
        try:
            await agent.close()
        except nbagent.NbagentError:
            pass
    out.write("done\n")


def _reconnect(url: str) -> Any:
    import psycopg

    while True:
        try:
            return psycopg.connect(url, autocommit=True, prepare_threshold=None)
        except psycopg.Error:
            time.sleep(0.2)


# -- the follower process -----------------------------------------------------------------------


async def follower(args: argparse.Namespace) -> None:
    import nbagent
    from nbagent.store.postgres import listen as pg_listen
    from nbagent.store.postgres import pool as pg_pool
    from nbagent.store.postgres.store import PostgresStore

    ids = Path(args.ids).read_text().split()
    lags: list[float] = []

    async def follow(sid: str) -> None:
        async for event in nbagent.follow_events(args.url, sid, after=0):
            lags.append(time.time() * 1000 - event.time)

    tasks = [asyncio.create_task(follow(sid)) for sid in ids]
    listener = pg_listen.listener_for(PostgresStore(args.url))
    while len(listener.ready_sessions()) < len(ids):
        await asyncio.sleep(0.05)
    print("ready", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # "stop"
    most = pg_pool.connections() + (1 if listener.listening else 0)
    for t in tasks:
        t.cancel()
    print(json.dumps({"lags": lags, "connections": most, "listens": listener.connections}), flush=True)


# -- the parent ---------------------------------------------------------------------------------


def spawn(*argv: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def one_run(cluster: Any, bouncer: Any, n: int, args: argparse.Namespace, chaos: bool) -> dict[str, Any]:
    import psycopg

    schema = f"scale_{n}_{'chaos' if chaos else 'calm'}"
    url = bouncer.url(schema=schema)
    direct = cluster.url(schema=schema)
    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_bare (pid int, body text)")
    work = Path(tempfile.mkdtemp(prefix="nbagent-scale-"))
    procs = min(args.procs, n)
    share = [n // procs + (1 if k < n % procs else 0) for k in range(procs)]
    seconds = args.seconds * (2 if chaos else 1)
    writers: list[tuple[subprocess.Popen[str], Path]] = []
    for k in range(procs):
        out = work / f"w{k}.txt"
        argv = ["--writer", "--url", url, "--bare-url", bouncer.url(), "--count", str(share[k])]
        argv += ["--seconds", str(seconds), "--pause", str(args.pause), "--out", str(out)]
        writers.append((spawn(*argv), out))
    for proc, _ in writers:
        assert proc.stdout.readline().strip() == "ready"
    ids = [line.split()[1] for _, out in writers for line in out.read_text().splitlines()]
    (work / "ids.txt").write_text("\n".join(ids))
    env = {"NBAGENT_PG_POOL_SIZE": "1", "NBAGENT_PG_LISTEN_URL": cluster.url()}
    follow = spawn("--follower", "--url", direct, "--ids", str(work / "ids.txt"), env=env)
    assert follow.stdout.readline().strip() == "ready"
    start = time.monotonic()
    for proc, _ in writers:
        proc.stdin.write("go\n")
        proc.stdin.flush()
    events: list[str] = []
    if chaos:
        until(start + seconds * 0.2)
        victim, out = writers[0]
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        mine = [line.split()[1] for line in out.read_text().splitlines() if line.startswith("session ")]
        argv = ["--writer", "--url", url, "--bare-url", bouncer.url(), "--count", "0", "--resume"]
        left = start + seconds - time.monotonic()
        argv += [",".join(mine), "--seconds", f"{max(1.0, left):.1f}", "--pause", str(args.pause)]
        again = spawn(*argv, "--out", str(work / "w0b.txt"))
        assert again.stdout.readline().strip() == "ready"
        again.stdin.write("go\n")
        again.stdin.flush()
        writers[0] = (again, work / "w0b.txt")
        writers.append((victim, out))
        events.append(f"kill -9 writer at {time.monotonic() - start:.1f} s; resumed at once")
        until(start + seconds * 0.45)
        bouncer.restart()
        events.append(f"PgBouncer restarted at {time.monotonic() - start:.1f} s")
        until(start + seconds * 0.7)
        cluster.restart()
        events.append(f"PostgreSQL restarted at {time.monotonic() - start:.1f} s")
    for proc, _ in writers:
        if proc.poll() is None:
            proc.wait(timeout=seconds * 4 + 120)
    follow.stdin.write("stop\n")
    follow.stdin.flush()
    got = json.loads(follow.stdout.readline())
    follow.wait()
    result = summarise(work, got, n, seconds)
    result["events"] = events
    if chaos:
        result.update(verify(direct, work))
    return result


def until(moment: float) -> None:
    """Sleep until ``moment`` (``time.monotonic()``); at once if it is past."""
    time.sleep(max(0.0, moment - time.monotonic()))


def summarise(work: Path, got: dict[str, Any], n: int, seconds: float) -> dict[str, Any]:
    injects: list[float] = []
    bare: list[float] = []
    errors = 0
    for out in work.glob("w*.txt"):
        for line in out.read_text().splitlines():
            kind, *rest = line.split()
            if kind == "ack":
                injects.append(float(rest[4]))
            elif kind == "bare":
                bare.append(float(rest[0]))
            elif kind == "error":
                errors += 1
    lags = got["lags"]
    return {
        "sessions": n,
        "injects": len(injects),
        "rate": len(injects) / seconds,
        "inject_p50": median(injects) * 1e3,
        "inject_p99": pct(injects, 99) * 1e3,
        "bare_p50": median(bare) * 1e3 if bare else float("nan"),
        "lag_p50": median(lags) if lags else float("nan"),
        "lag_p99": pct(lags, 99) if lags else float("nan"),
        "follower_connections": got["connections"],
        "errors": errors,
    }


def verify(url: str, work: Path) -> dict[str, Any]:
    """Every acknowledged delivery is in its log exactly once; no session's appends interleave writers."""
    import nbagent

    acks: dict[str, list[tuple[int, str, int]]] = {}
    for out in work.glob("w*.txt"):
        for line in out.read_text().splitlines():
            if line.startswith("ack "):
                _, sid, mid, seq, pid, _ = line.split()
                acks.setdefault(sid, []).append((int(seq), mid, int(pid)))
    lost = twice = interleaved = 0
    for sid, mine in acks.items():
        stored = [
            m["id"]
            for e in nbagent.read_events(url, sid)
            if e.type == "agent/inbox/spliced"
            for m in e.data.get("inserted", [])
        ]
        for _, mid, _ in mine:
            found = stored.count(mid)
            lost += found == 0
            twice += found > 1
        order: list[int] = []
        for _, _, pid in sorted(mine):
            if not order or order[-1] != pid:
                order.append(pid)
        interleaved += len(order) != len(set(order))
    return {"acked": sum(map(len, acks.values())), "lost": lost, "twice": twice, "interleaved": interleaved}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writer", action="store_true")
    parser.add_argument("--follower", action="store_true")
    parser.add_argument("--url")
    parser.add_argument("--bare-url")
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--resume", default="")
    parser.add_argument("--out")
    parser.add_argument("--ids")
    parser.add_argument("--sessions", default="10,100,1000")
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument(
        "--pause", type=float, default=0.0, help="a writer's inject interval (set from --rate)"
    )
    parser.add_argument(
        "--rate", type=float, default=150.0, help="injects per second of all writers together (0: flat out)"
    )
    parser.add_argument(
        "--chaos", action="store_true", help="also run the largest count with kills and restarts"
    )
    parser.add_argument("--tiny", action="store_true", help="a smoke run: 4 sessions, 2 writers, 3 s, chaos")
    parser.add_argument("--no-assert", action="store_true")
    args = parser.parse_args()
    if args.writer:
        asyncio.run(writer(args))
        return 0
    if args.follower:
        asyncio.run(follower(args))
        return 0
    if args.tiny:
        args.sessions, args.procs, args.seconds, args.chaos = "4", 2, 3.0, True
    import pg_bouncer
    import pg_server

    counts = [int(x) for x in args.sessions.split(",")]
    args.pause = args.procs / args.rate if args.rate > 0 else 0.0
    with pg_server.Cluster(fsync=True) as cluster, pg_bouncer.Bouncer(cluster, pool_size=16) as bouncer:
        rows = [one_run(cluster, bouncer, n, args, chaos=False) for n in counts]
        chaos = one_run(cluster, bouncer, counts[-1], args, chaos=True) if args.chaos else None
    return report(rows, chaos, args)


def report(rows: list[dict[str, Any]], chaos: dict[str, Any] | None, args: argparse.Namespace) -> int:
    pace = f"{args.rate:g} injects/s offered in all" if args.rate > 0 else "flat out"
    print(f"# bench_pg_scale: {args.procs} writer processes, {args.seconds:g} s, {pace}, through PgBouncer")
    head = [
        "sessions",
        "injects/s",
        "inject p50",
        "inject p99",
        "bare p50",
        "ratio",
        "lag p50",
        "lag p99",
        "follower conns",
        "errors",
    ]
    print("  ".join(f"{h:>14}" for h in head))
    missed = []
    for r in rows:
        ratio = r["inject_p50"] / r["bare_p50"]
        cells = [r["sessions"], f"{r['rate']:.0f}", f"{r['inject_p50']:.2f} ms", f"{r['inject_p99']:.2f} ms"]
        cells += [
            f"{r['bare_p50']:.2f} ms",
            f"{ratio:.2f}x",
            f"{r['lag_p50']:.0f} ms",
            f"{r['lag_p99']:.0f} ms",
        ]
        cells += [r["follower_connections"], r["errors"]]
        print("  ".join(f"{c!s:>14}" for c in cells))
        if ratio > 1.5:
            missed.append(
                f"inject p50 {ratio:.2f}x the bare commit at {r['sessions']} sessions (target 1.5x)"
            )
        if r["lag_p99"] > 250:
            missed.append(f"follower lag p99 {r['lag_p99']:.0f} ms at {r['sessions']} sessions (target 250)")
        if r["follower_connections"] > 2:
            missed.append(f"{r['follower_connections']} follower connections (target 2)")
    if chaos is not None:
        print(f"chaos at {chaos['sessions']} sessions: " + "; ".join(chaos["events"]))
        print(
            f"  {chaos['acked']} acknowledged deliveries: {chaos['lost']} lost, {chaos['twice']} stored twice, "
            f"{chaos['interleaved']} sessions with two writers interleaved; {chaos['errors']} calls failed "
            f"while a part was down; lag p99 {chaos['lag_p99']:.0f} ms"
        )
        if chaos["lost"] or chaos["twice"] or chaos["interleaved"]:
            missed.append("the chaos run lost or doubled a delivery, or let two writers interleave")
    for m in missed:
        print(f"MISSED: {m}")
    return 1 if missed and not args.no_assert else 0


if __name__ == "__main__":
    sys.exit(main())
