"""PostgreSQL store benchmarks: ``python benchmarks/bench_postgres.py [--quick|--tiny] [--url URL]``.

Prints one table (``metric, value, baseline, ratio, target, met?``); every baseline is measured on
the same server in the same run (interleaved with the nbagent samples where possible):

1. ``agent.inject()`` p50/p99 on an idle session vs a bare psycopg ``INSERT; COMMIT`` of the same
   JSON row into the same ``events`` table (a second connection, ``autocommit`` off).
2. The durable loop step (reported, no target): turns of a tool step and a text step with a
   zero-latency scripted model, per step; the baseline is as many bare commits as the step really
   made transactions (counted in the same run: 6 per turn, so 3 per step).
3. Resume of a 100k-event session: ``resume_session`` ready, then materialising every event and
   the model history vs a bare ``SELECT seq, time, type, data … ORDER BY seq`` of the same rows with
   ``json.loads`` of each, on a fresh connection.

Without ``--url`` a throwaway server is started (``tests/pg_server.py``; ``fsync`` on, as in
production). Exits 1 when a target is missed, unless ``--no-assert``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _util
from _util import Row, count_writes, median, pct

perf = time.perf_counter
INJECT_TEXT = (
    "Context: df_sales was reloaded from sales_q3.parquet (4 columns, 1,204 rows); "
    "the 'growth' column is now a float in [0, 1]."
)
CLEAR_EVERY = 32


@dataclass
class Config:
    name: str
    inject_reps: int
    step_blocks: int
    step_turns: int
    resume_events: int
    mat_reps: int


FULL = Config("full", inject_reps=600, step_blocks=8, step_turns=8, resume_events=100_000, mat_reps=3)
QUICK = Config("quick", inject_reps=200, step_blocks=4, step_turns=4, resume_events=100_000, mat_reps=2)
TINY = Config("tiny", inject_reps=10, step_blocks=1, step_turns=1, resume_events=300, mat_reps=1)


def label(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 else str(n)


class Bench:
    def __init__(self, cfg: Config, url: str) -> None:
        import psycopg

        import nbagent

        self.nbagent = nbagent
        self.psycopg = psycopg
        self.cfg = cfg
        self.url = url
        self.rows: list[Row] = []
        self.info: list[str] = []

    def bare_conn(self, schema: str) -> Any:
        conn = self.psycopg.connect(self.url)  # autocommit off: INSERT opens a transaction
        conn.execute(f'SET search_path = "{schema}"')
        conn.commit()
        return conn

    def schema(self) -> str:
        from nbagent.store.postgres.store import PostgresStore

        store = PostgresStore(self.url, mode="create")
        try:
            return store.schema
        finally:
            store.close()

    # -- 1. inject --------------------------------------------------------------------------------

    async def inject(self) -> None:
        cfg = self.cfg
        _util_say(f"[1] inject: {cfg.inject_reps} samples each side, interleaved")
        agent = self.nbagent.open_session(self.url)
        agent.inject(INJECT_TEXT)
        data = self.nbagent._json.dumps(agent.events[-1].data)
        bare = self.bare_conn(self.schema())
        bare_sid = "bare-" + uuid.uuid4().hex
        seq = 0

        def bare_commit() -> float:
            nonlocal seq
            t0 = perf()
            bare.execute(
                "INSERT INTO events VALUES (%s, %s, %s, %s, %s, %s)",
                (bare_sid, seq, int(time.time() * 1000), "agent/inbox/spliced", data, 1),
            )
            bare.commit()
            seq += 1
            return perf() - t0

        count = 0

        def inject() -> float:
            nonlocal count
            t0 = perf()
            agent.inject(INJECT_TEXT)
            dt = perf() - t0
            count += 1
            if count % CLEAR_EVERY == 0:
                agent.inbox.clear()
            return dt

        for _ in range(5):
            bare_commit()
            inject()
        nb_t: list[float] = []
        bare_t: list[float] = []
        gc.collect()
        for i in range(cfg.inject_reps):
            if i % 2:
                nb_t.append(inject())
                bare_t.append(bare_commit())
            else:
                bare_t.append(bare_commit())
                nb_t.append(inject())
        await agent.close()
        bare.close()
        self.bare_p50 = median(bare_t)
        p50, p99 = median(nb_t), pct(nb_t, 0.99)
        self.rows.append(
            Row("inject p50", p50, "s", self.bare_p50, "<= 1.5x bare", p50 <= 1.5 * self.bare_p50)
        )
        self.rows.append(Row("inject p99", p99, "s", pct(bare_t, 0.99)))
        self.info.append(f"inject: splice row of {len(data)} B of JSON; bare = INSERT; COMMIT via psycopg")

    # -- 2. the durable step ------------------------------------------------------------------------

    async def step(self) -> None:
        from nbagent.models import Response, ScriptedModel, ToolCall

        cfg = self.cfg
        _util_say(f"[2] durable step: {cfg.step_blocks} blocks of {cfg.step_turns} turns")

        @self.nbagent.tool
        def lookup(key: str) -> str:
            return _util.TOOL_OUTPUT

        model = ScriptedModel()
        agent = self.nbagent.open_session(self.url, model=model, tools=[lookup])

        async def turns(n: int) -> None:
            model.responses.clear()
            model.requests.clear()
            for _ in range(n):
                model.add(
                    Response(tool_calls=[ToolCall("lookup", {"key": "df_sales"})]), Response(_util.ANSWER)
                )
            for _ in range(n):
                agent.followup(_util.PROMPT)
                await agent.when_idle()

        await turns(2)
        writes = count_writes(agent)
        per_step: list[float] = []
        gc.collect()
        for _ in range(cfg.step_blocks):
            t0 = perf()
            await turns(cfg.step_turns)
            per_step.append((perf() - t0) / (2 * cfg.step_turns))
        await agent.close()
        value = median(per_step)
        per_turn = writes[0] / (cfg.step_blocks * cfg.step_turns)
        floor = per_turn / 2 * self.bare_p50  # as many bare commits as the step made transactions
        self.rows.append(Row("loop step (durable)", value, "s", floor))  # reported, no target
        self.info.append(
            f"step: a turn of a tool step and a text step made {per_turn:g} transactions (counted; "
            f"{per_turn / 2:g} per step, the followup's and the turn's opening included): the baseline "
            f"is {per_turn / 2:g} bare commits"
        )

    # -- 3. resume ------------------------------------------------------------------------------------

    def history(self, n: int) -> tuple[str, int]:
        from nbagent import _json
        from nbagent.store.postgres.store import PostgresStore

        sid = uuid.uuid4().hex
        store = PostgresStore(self.url, mode="create")
        try:
            now = int(time.time() * 1000) - n
            rows = [
                (sid, seq, now + seq, type_, _json.dumps(data), pending)
                for seq, (type_, data, pending) in enumerate(_util.synth_history(n))
            ]
            store.write(rows, session=(sid, now, "bench", None, None, "scripted", "{}"))
            return sid, len(rows)
        finally:
            store.close()

    def bare_read(self, schema: str, sid: str) -> list[tuple[Any, ...]]:
        conn = self.psycopg.connect(self.url, autocommit=True)
        try:
            from psycopg.types.string import TextLoader

            conn.adapters.register_loader("json", TextLoader)  # the text as stored, decoded below
            loads = json.loads
            cur = conn.execute(
                f'SELECT seq, time, type, data FROM "{schema}".events WHERE session_id = %s ORDER BY seq',
                (sid,),
            )
            return [(s, t, ty, loads(d)) for s, t, ty, d in cur.fetchall()]
        finally:
            conn.close()

    async def resume(self) -> None:
        cfg = self.cfg
        n = cfg.resume_events
        _util_say(f"[3] resume: writing a {label(n)}-event session")
        sid, count = self.history(n)
        schema = self.schema()
        ready: list[float] = []
        mat: list[float] = []
        bare: list[float] = []
        for i in range(cfg.mat_reps):
            gc.collect()
            t0 = perf()
            agent = self.nbagent.resume_session(self.url, sid)
            ready.append(perf() - t0)
            for first in ("nb", "bare") if i % 2 else ("bare", "nb"):
                gc.collect()
                t0 = perf()
                if first == "nb":
                    events = agent.events
                    history = agent.driver.history()
                    mat.append(perf() - t0)
                    assert len(events) == count and history
                else:
                    rows = self.bare_read(schema, sid)
                    bare.append(perf() - t0)
                    assert len(rows) == count
            await agent.close()
            del agent
        at = f"@{label(count)} events"
        self.rows.append(Row(f"resume ready {at}", median(ready), "s"))
        m, b = median(mat), median(bare)
        self.rows.append(Row(f"resume materialize all {at}", m, "s", b, "<= 1.5x bare SELECT", m <= 1.5 * b))


def _util_say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


async def amain(bench: Bench) -> None:
    await bench.inject()
    await bench.step()
    await bench.resume()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", help="a postgresql:// URL (default: a throwaway server started here)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--tiny", action="store_true", help="a few repetitions of tiny sizes (smoke test)")
    parser.add_argument("--no-assert", action="store_true", help="exit 0 even if a target is missed")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    cfg = TINY if args.tiny else QUICK if args.quick else FULL
    started = perf()
    cluster = None
    url = args.url
    if url is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        import pg_server

        reason = pg_server.unavailable_reason()
        if reason:
            print(f"bench_postgres: {reason}", file=sys.stderr)
            return 2
        cluster = pg_server.Cluster(fsync=True).start()
        url = cluster.url(schema=f"bench_{uuid.uuid4().hex[:8]}")
    try:
        bench = Bench(cfg, url)
        asyncio.run(amain(bench))
        import psycopg

        with psycopg.connect(url) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]
            fsync = conn.execute("SHOW fsync").fetchone()[0]
            sync = conn.execute("SHOW synchronous_commit").fetchone()[0]
    finally:
        if cluster is not None:
            cluster.stop()
    where = "a throwaway local server (Unix socket)" if cluster else "the given server"
    print(
        f"nbagent PostgreSQL benchmarks ({cfg.name}); PostgreSQL {version} on {where}, fsync={fsync}, "
        f"synchronous_commit={sync}; psycopg {psycopg.__version__}; {os.cpu_count()} CPUs; "
        f"Python {sys.version.split()[0]}; {perf() - started:.0f} s"
    )
    print(_util.table(bench.rows))
    for line in bench.info:
        print("  " + line)
    rows = bench.rows
    print(f"targets met: {sum(r.ok is True for r in rows)}/{sum(r.ok is not None for r in rows)}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in rows], indent=1))
    missed = [r.metric for r in rows if r.ok is False]
    if missed and not args.no_assert:
        print("missed: " + "; ".join(missed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
