"""Core runtime benchmarks (issue #2, item 6): ``python benchmarks/run.py [--quick]``.

Prints one table of medians (and p99s) with the baseline measured in the same run, the ratio, the
target and whether it is met. Exits 1 when a target is missed, unless ``--no-assert``.
See ``benchmarks/README.md`` for what each figure measures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _util
from _ceiling import BareGroupCommit
from _util import Row, median, pct

perf = time.perf_counter


@dataclass
class Config:
    name: str
    inject_sizes: list[int]
    inject_reps: int
    threads: int
    per_thread: int
    tp_rounds: int
    bare_per_round: int
    loop_sizes: list[int]
    loop_turns_mem: int
    loop_turns_file: int
    resume_sizes: list[int]
    ready_reps: int
    mat_reps: int
    mat_max: int
    cold_reps: int
    notes: list[str] = field(default_factory=list)


FULL = Config(
    name="full",
    inject_sizes=[0, 10_000, 100_000],
    inject_reps=400,
    threads=16,
    per_thread=8,
    tp_rounds=12,
    bare_per_round=24,
    loop_sizes=[0, 1_000, 10_000],
    loop_turns_mem=300,
    loop_turns_file=16,
    resume_sizes=[10_000, 100_000],
    ready_reps=15,
    mat_reps=3,
    mat_max=100_000,
    cold_reps=10,
)
QUICK = Config(
    name="quick",
    inject_sizes=[0, 10_000, 100_000],
    inject_reps=100,
    threads=16,
    per_thread=8,
    tp_rounds=4,
    bare_per_round=16,
    loop_sizes=[0, 1_000, 10_000],
    loop_turns_mem=100,
    loop_turns_file=4,
    resume_sizes=[10_000, 100_000],
    ready_reps=5,
    mat_reps=2,
    mat_max=10_000,
    cold_reps=3,
)
TINY = Config(
    name="tiny",
    inject_sizes=[0, 300],
    inject_reps=6,
    threads=4,
    per_thread=2,
    tp_rounds=1,
    bare_per_round=4,
    loop_sizes=[0, 100],
    loop_turns_mem=4,
    loop_turns_file=1,
    resume_sizes=[300],
    ready_reps=1,
    mat_reps=1,
    mat_max=1_000,
    cold_reps=1,
)

INJECT_TEXT = (
    "Context: df_sales was reloaded from sales_q3.parquet (4 columns, 1,204 rows); "
    "the 'growth' column is now a float in [0, 1]."
)
CLEAR_EVERY = 32
"""Untimed ``inbox.clear()`` after this many injects keeps the pending queue realistic (short)."""


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def label(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


class Bench:
    def __init__(self, cfg: Config, workdir: Path) -> None:
        import nbagent
        import nbagent.store.sqlite.store

        self.nbagent = nbagent
        self.cfg = cfg
        self.dir = workdir
        self.sync = nbagent.store.sqlite.store.SYNCHRONOUS
        self.rows: list[Row] = []
        self.bases: dict[int, tuple[Path, str, int]] = {}
        self.info: list[str] = []

    # -- fixtures ---------------------------------------------------------------------------------

    def base(self, n: int) -> tuple[Path, str, int]:
        """A session file with ``n`` prior events (built once per size)."""
        if n not in self.bases:
            path = self.dir / f"base-{n}.db"
            t0 = perf()
            sid, count = _util.write_history(str(path), n)
            say(f"  built a {count}-event history in {perf() - t0:.1f} s")
            self.bases[n] = (path, sid, count)
        return self.bases[n]

    def copy(self, n: int, tag: str) -> tuple[Path, str, int]:
        path, sid, count = self.base(n)
        dest = self.dir / f"{tag}-{n}-{uuid.uuid4().hex[:6]}.db"
        shutil.copyfile(path, dest)
        os.chmod(dest, 0o600)
        return dest, sid, count

    def tool(self) -> Any:
        def lookup(key: str) -> str:
            """Look up a key in the notebook's namespace."""
            return _util.TOOL_OUTPUT

        return self.nbagent.tool(lookup)

    def scripted(self, turns: int = 0) -> Any:
        from nbagent.models import ScriptedModel

        model = ScriptedModel()
        self.add_turns(model, turns)
        return model

    @staticmethod
    def add_turns(model: Any, turns: int) -> None:
        from nbagent.models import Response, ToolCall

        for _ in range(turns):
            model.add(Response(tool_calls=[ToolCall("lookup", {"key": "df_sales"})]), Response(_util.ANSWER))

    async def session(
        self, n: int, tag: str, *, model: Any = None, tools: Any = ()
    ) -> tuple[Any, Path | None]:
        """An agent on a file holding ``n`` prior events (resumed), or a fresh one for ``n == 0``."""
        nb = self.nbagent
        model = model or self.scripted()
        if n == 0:
            path = self.dir / f"{tag}-0-{uuid.uuid4().hex[:6]}.db"
            return nb.open_session(path, model=model, tools=tools), path
        path, sid, _ = self.copy(n, tag)
        return nb.resume_session(path, sid, model=model, tools=tools), path

    def bare_conn(self, path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout = 10000")
        assert conn.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal"
        conn.execute(f"PRAGMA synchronous = {self.sync}")
        return conn

    # -- 1. inject latency ------------------------------------------------------------------------

    async def inject_probe(
        self, n: int
    ) -> tuple[Callable[[], float], Callable[[], float], Callable[[], Any], int]:
        """(timed inject, timed bare commit of the same row in the same file, cleanup, row size)."""
        agent, path = await self.session(n, "inject")
        assert path is not None
        conn = self.bare_conn(path)
        bare_sid = "bare-" + uuid.uuid4().hex
        agent.inject(INJECT_TEXT)  # warm-up, and the splice whose JSON the bare row copies
        splice = agent.driver.projections.since(agent.driver.committed - 1)[0]
        assert splice.type == "agent/inbox/spliced"
        data = self.nbagent._json.dumps(splice.data)
        seq = 0
        count = 0

        def bare() -> float:
            nonlocal seq
            t0 = perf()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)",
                (bare_sid, seq, int(time.time() * 1000), "agent/inbox/spliced", data, 1),
            )
            conn.execute("COMMIT")
            seq += 1
            return perf() - t0

        def inject() -> float:
            nonlocal count
            t0 = perf()
            agent.inject(INJECT_TEXT)
            dt = perf() - t0
            count += 1
            if count % CLEAR_EVERY == 0:
                agent.inbox.clear()
            return dt

        async def close() -> None:
            await agent.close()
            conn.close()

        for _ in range(3):
            bare()
            inject()
        return inject, bare, close, len(data)

    async def inject_latency(self) -> None:
        """All history sizes open at once; samples interleave sizes and nbagent/bare (drift-fair)."""
        sizes = self.cfg.inject_sizes
        probes = {}
        for n in sizes:
            say(f"[1] inject latency: preparing a session with {n} prior events")
            probes[n] = await self.inject_probe(n)
        nb_t: dict[int, list[float]] = {n: [] for n in sizes}
        bare_t: dict[int, list[float]] = {n: [] for n in sizes}
        say(f"[1] inject latency: {self.cfg.inject_reps} samples per size, interleaved")
        gc.collect()
        for i in range(self.cfg.inject_reps):
            for n in sizes:
                inject, bare = probes[n][0], probes[n][1]
                if i % 2:
                    nb_t[n].append(inject())
                    bare_t[n].append(bare())
                else:
                    bare_t[n].append(bare())
                    nb_t[n].append(inject())
        for n in sizes:
            await probes[n][2]()
        ratios: dict[int, float] = {}
        for n in sizes:
            p50, bp50 = median(nb_t[n]), median(bare_t[n])
            p99, bp99 = pct(nb_t[n], 0.99), pct(bare_t[n], 0.99)
            ratios[n] = p50 / bp50
            self.rows.append(
                Row(f"inject p50 @{label(n)} events", p50, "s", bp50, "<= 1.25x bare", p50 <= 1.25 * bp50)
            )
            self.rows.append(
                Row(f"inject p99 @{label(n)} events", p99, "s", bp99, "<= 1.5x bare", p99 <= 1.5 * bp99)
            )
        self.info.append(
            f"inject: splice row {probes[sizes[0]][3]} B of JSON; {self.cfg.inject_reps} samples per size "
            "and per side, all sizes and both sides interleaved"
        )
        lo, hi = min(sizes), max(sizes)
        if lo != hi:
            # Flat in history: the p50 ratio to bare at the largest history vs at the empty one.
            ok = ratios[hi] <= 1.25 * ratios[lo]
            self.rows.append(
                Row(
                    f"inject p50/bare @{label(hi)} vs @{label(lo)}",
                    ratios[hi],
                    "x",
                    ratios[lo],
                    "<= 1.25x",
                    ok,
                )
            )

    # -- 2. concurrent throughput -----------------------------------------------------------------

    async def throughput(self) -> None:
        cfg = self.cfg
        say(f"[2] throughput: {cfg.threads} threads x {cfg.per_thread} injects, {cfg.tp_rounds} rounds")
        agent, path = await self.session(0, "tp")
        assert path is not None
        agent.inject("warm-up")
        agent.inbox.clear()
        file = agent.driver.journal.file
        real_write = file.write
        writes = [0]

        def counting_write(*a: Any, **k: Any) -> None:
            writes[0] += 1
            real_write(*a, **k)

        file.write = counting_write  # instance attribute: counts transactions, nothing else changes
        conn = self.bare_conn(path)
        bare_sid = "bare-" + uuid.uuid4().hex
        agent.inject(INJECT_TEXT)
        data = self.nbagent._json.dumps(agent.driver.projections.since(agent.driver.committed - 1)[0].data)
        agent.inbox.clear()
        writes[0] = 0
        seq = 0

        def bare_round() -> float:
            nonlocal seq
            t0 = perf()
            for _ in range(cfg.bare_per_round):
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(
                    "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)",
                    (bare_sid, seq, int(time.time() * 1000), "agent/inbox/spliced", data, 1),
                )
                conn.execute("COMMIT")
                seq += 1
            return perf() - t0

        errors: list[BaseException] = []
        ceiling = BareGroupCommit(self.bare_conn(path))
        ceiling_sid = "ceiling-" + uuid.uuid4().hex
        ceiling_seq = iter(range(1 << 62))

        def nb_inject() -> None:
            agent.inject(INJECT_TEXT)

        def ceiling_commit() -> None:
            row = (ceiling_sid, next(ceiling_seq), int(time.time() * 1000), "agent/inbox/spliced", data, 1)
            ceiling.commit(row)

        def threads_round(call: Callable[[], None]) -> float:
            barrier = threading.Barrier(cfg.threads + 1)

            def work() -> None:
                barrier.wait()
                try:
                    for _ in range(cfg.per_thread):
                        call()
                except BaseException as exc:  # pragma: no cover - reported below
                    errors.append(exc)

            threads = [threading.Thread(target=work) for _ in range(cfg.threads)]
            for t in threads:
                t.start()
            barrier.wait()
            t0 = perf()
            for t in threads:
                t.join()
            return perf() - t0

        nb_time = bare_time = ceiling_time = nb_cpu = ceiling_cpu = 0.0
        for _ in range(cfg.tp_rounds):
            bare_time += bare_round()
            # The agent's loop idles, awaiting the round: the threads commit without it.
            cpu0 = _util.process_cpu()
            nb_time += await asyncio.to_thread(threads_round, nb_inject)
            cpu1 = _util.process_cpu()
            agent.inbox.clear()
            cpu2 = _util.process_cpu()
            ceiling_time += await asyncio.to_thread(threads_round, ceiling_commit)
            nb_cpu += cpu1 - cpu0
            ceiling_cpu += _util.process_cpu() - cpu2
        if errors:
            raise errors[0]
        injects = cfg.tp_rounds * cfg.threads * cfg.per_thread
        nb_writes = writes[0] - cfg.tp_rounds  # minus the clears
        await agent.close()
        conn.close()
        ceiling.conn.close()
        nb_tp = injects / nb_time
        bare_tp = cfg.tp_rounds * cfg.bare_per_round / bare_time
        ceiling_tp = injects / ceiling_time
        self.rows.append(
            Row(
                f"inject throughput, {cfg.threads} threads",
                nb_tp,
                "/s",
                bare_tp,
                ">= 4x 1-thread bare",
                nb_tp >= 4 * bare_tp,
            )
        )
        self.rows.append(
            Row(f"ceiling: bare group commit, {cfg.threads} threads", ceiling_tp, "/s", bare_tp, "-", None)
        )
        self.info.append(
            f"group commit: {injects} injects in {nb_writes} transactions "
            f"({injects / max(nb_writes, 1):.1f} per commit); the ceiling (benchmarks/_ceiling.py: the same "
            f"leader/follower design, no nbagent) {injects / max(ceiling.transactions, 1):.1f} per commit; "
            f"nbagent reaches {nb_tp / ceiling_tp:.0%} of it; CPU (user + system, all threads) per inject "
            f"{nb_cpu / injects * 1e6:.0f} µs, per ceiling commit {ceiling_cpu / injects * 1e6:.0f} µs; "
            f"load average {os.getloadavg()[0]:.1f}"
        )

    # -- 3. loop overhead per step ----------------------------------------------------------------

    async def _turns(self, agent: Any, model: Any, turns: int) -> None:
        # ScriptedModel keeps every request (each holds a history snapshot): O(n^2) memory that makes
        # the garbage collector, not nbagent, dominate long runs. Start each block with a fresh script.
        model.responses.clear()
        model.requests.clear()
        self.add_turns(model, turns)
        for _ in range(turns):
            agent.followup(_util.PROMPT)
            await agent.when_idle()

    async def loop_agent(self, n: int, store: str) -> tuple[Any, Any, int]:
        """A warmed-up agent after ``n`` prior events, its model, and the turns per timed block."""
        import nbagent.store.sqlite.store

        cfg = self.cfg
        model = self.scripted()
        tools = [self.tool()]
        saved = nbagent.store.sqlite.store.SYNCHRONOUS
        if store == "memory":
            agent = self.nbagent.open_session(None, model=model, tools=tools)
            while len(agent.driver.projections) < n:  # build the prior history by running real turns
                await self._turns(agent, model, 20)
            turns = cfg.loop_turns_mem
        else:
            nbagent.store.sqlite.store.SYNCHRONOUS = store.split(":")[1]
            try:
                agent, _ = await self.session(n, "loop", model=model, tools=tools)
            finally:
                nbagent.store.sqlite.store.SYNCHRONOUS = saved
            turns = cfg.loop_turns_file if store.endswith(saved) else cfg.loop_turns_mem // 2
        await self._turns(agent, model, 2)  # warm-up: loads a resumed prefix, writes the resume header
        return agent, model, max(1, turns // 8)

    async def loop_overhead(self) -> None:
        """Per store, agents at every history size run blocks of turns in turn (drift-fair)."""
        cfg = self.cfg
        stores = ["memory", f"file:{self.sync}"]
        if self.sync != "NORMAL":
            stores.append("file:NORMAL")
        for store in stores:
            say(f"[3] loop step, {store}, at {cfg.loop_sizes} prior events")
            agents = {n: await self.loop_agent(n, store) for n in cfg.loop_sizes}
            per_step: dict[int, list[float]] = {n: [] for n in cfg.loop_sizes}
            durable = store != "memory"
            writes = {n: _util.count_writes(a) for n, (a, _, _) in agents.items()} if durable else {}
            bare = self.step_bare_conn(agents[cfg.loop_sizes[0]][0], store) if durable else None
            bare_times: list[float] = []
            gc.collect()
            for _ in range(8):
                for n, (agent, model, block) in agents.items():
                    t0 = perf()
                    await self._turns(agent, model, block)
                    per_step[n].append((perf() - t0) / (2 * block))
                    if bare is not None:  # bare commits between the blocks: the same disk, the same minute
                        bare_times += [bare() for _ in range(4)]
            floor = None
            if writes:
                turns = sum(8 * block for _, _, block in agents.values())
                per_turn = sum(w[0] for w in writes.values()) / turns
                floor = per_turn / 2 * median(bare_times)
                self.info.append(
                    f"loop ({store}): {per_turn:g} transactions per turn of a tool step and a text step "
                    f"({per_turn / 2:g} per step, the followup's and the turn's opening included); the "
                    f"baseline is that many bare commits ({median(bare_times) * 1e6:.0f} µs each)"
                )
            for agent, _, _ in agents.values():
                assert agent.status == "idle"
                await agent.close()
            figures = {n: median(v) for n, v in per_step.items()}
            name = "memory" if store == "memory" else f"file, synchronous={store.split(':')[1]}"
            # In memory the CPU target; a durable step (synchronous=NORMAL: every commit survives a
            # killed process) <= 1.4 ms; with FULL each of the turn's commits waits for an fsync.
            limit = {"memory": 4e-4, "file:NORMAL": 1.4e-3}.get(store)
            for n in cfg.loop_sizes:
                self.rows.append(
                    Row(
                        f"loop step ({name}) @{label(n)}",
                        figures[n],
                        "s",
                        floor,
                        f"<= {limit * 1000:g} ms" if limit else "",
                        figures[n] <= limit if limit else None,
                    )
                )
            lo, hi = min(figures), max(figures)
            self.rows.append(
                Row(
                    f"loop step ({store}) @{label(hi)} vs @{label(lo)}",
                    figures[hi],
                    "s",
                    figures[lo],
                    "<= 1.5x",
                    figures[hi] <= 1.5 * figures[lo],
                )
            )

    async def estimate_overhead(self) -> None:
        """The loop step with the ``request/estimate`` measured, and with the measuring replaced by a
        fixed record (its staging stays): blocks of turns in turn (ABBA), drift-fair; in memory (a
        CPU figure) and durable (``synchronous=NORMAL``)."""
        import nbagent.core.loop as loop_module
        from nbagent.log.events import RequestEstimate

        n = self.cfg.loop_sizes[min(1, len(self.cfg.loop_sizes) - 1)]
        measured = loop_module.request_estimate

        def fixed(driver: Any, turn: int, step: int, entered: Any) -> RequestEstimate:
            return RequestEstimate(turn, step, 0, {})

        inside = [0.0, 0]

        def timed(driver: Any, turn: int, step: int, entered: Any) -> RequestEstimate:
            t0 = perf()
            try:
                return measured(driver, turn, step, entered)
            finally:
                inside[0] += perf() - t0
                inside[1] += 1

        for store, name, limit in (("memory", "memory", 1.05), ("file:NORMAL", "file, NORMAL", None)):
            say(f"[3b] loop step with and without the estimate, {store}, @{label(n)} prior events")
            agent, model, block = await self.loop_agent(n, store)
            times: dict[str, list[float]] = {"with": [], "without": []}
            loads = [os.getloadavg()[0]]
            gc.collect()
            try:
                for round_ in range(8):  # ABBA: neither side always goes first
                    for variant in ("with", "without") if round_ % 2 == 0 else ("without", "with"):
                        loop_module.request_estimate = timed if variant == "with" else fixed  # type: ignore[assignment]
                        t0 = perf()
                        await self._turns(agent, model, block)
                        times[variant].append((perf() - t0) / (2 * block))
            finally:
                loop_module.request_estimate = measured
            loads.append(os.getloadavg()[0])
            await agent.close()
            with_, without = median(times["with"]), median(times["without"])
            self.rows.append(
                Row(
                    f"loop step ({name}) with the estimate @{label(n)}",
                    with_,
                    "s",
                    without,
                    f"<= {limit:g}x" if limit else "-",
                    with_ <= limit * without if limit else None,
                )
            )
            own = inside[0] / max(inside[1], 1)
            inside[:] = [0.0, 0]
            self.rows.append(
                Row(
                    f"  the estimate's own time per step ({name})",
                    own,
                    "s",
                    without,
                    "<= 0.05x",
                    own <= 0.05 * without,
                )
            )
            self.info.append(
                f"estimate ({store}): 8 alternating rounds (ABBA) of {2 * block} steps, medians; load average "
                f"{min(loads):.1f}-{max(loads):.1f}"
            )

    def step_bare_conn(self, agent: Any, store: str) -> Callable[[], float]:
        """A timed bare ``BEGIN IMMEDIATE; INSERT; COMMIT`` into ``agent``'s file, with the store's
        ``synchronous``, from a second connection (what one of the step's transactions costs bare)."""
        conn = self.bare_conn(Path(agent.path))
        conn.execute(f"PRAGMA synchronous = {store.split(':')[1]}")
        sid = "bare-" + uuid.uuid4().hex
        row = self.nbagent._json.dumps({"target": "next-step", "start": 0, "inserted": [INJECT_TEXT]})
        seq = 0

        def commit() -> float:
            nonlocal seq
            t0 = perf()
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", (sid, seq, 0, "bare", row, 1))
            conn.execute("COMMIT")
            seq += 1
            return perf() - t0

        return commit

    # -- 4. resume ----------------------------------------------------------------------------------

    def bare_read(self, path: Path, sid: str) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            loads = json.loads
            return [
                (s, t, ty, loads(d))
                for s, t, ty, d in conn.execute(
                    "SELECT seq, time, type, data FROM events WHERE session_id = ? ORDER BY seq", (sid,)
                )
            ]
        finally:
            conn.close()

    @staticmethod
    def materialize(agent: Any, count: int) -> float:
        t0 = perf()
        events = agent.events
        history = agent.driver.history()
        dt = perf() - t0
        assert len(events) == count and history
        return dt

    def bare_materialize(self, path: Path, sid: str, count: int) -> float:
        t0 = perf()
        rows = self.bare_read(path, sid)
        dt = perf() - t0
        assert len(rows) == count
        return dt

    async def resume(self) -> None:
        cfg = self.cfg
        nb = self.nbagent
        tools = [self.tool()]
        for n in cfg.resume_sizes:
            say(f"[4] resume at {n} events")
            path, sid, count = self.copy(n, "resume")
            ready: list[float] = []
            first: list[float] = []
            later: list[float] = []
            for _ in range(cfg.ready_reps):
                gc.collect()
                t0 = perf()
                agent = nb.resume_session(path, sid, model=self.scripted(), tools=tools)
                ready.append(perf() - t0)
                await agent.close()
            written, _, _ = self.copy(n, "first-write")  # (the injects lengthen this copy's log)
            for _ in range(cfg.ready_reps):  # the first write settles the checks resume owes
                agent = nb.resume_session(written, sid, model=self.scripted(), tools=tools)
                gc.collect()
                for into in (first, later):
                    t0 = perf()
                    agent.inject("context")
                    into.append(perf() - t0)
                agent.inbox.clear()
                await agent.close()
            at = f"@{label(n)} events"
            self.rows.append(
                Row(
                    f"resume ready {at}",
                    median(ready),
                    "s",
                    None,
                    "<= 50 ms" if n >= 100_000 else "",
                    median(ready) <= 0.05 if n >= 100_000 else None,
                )
            )
            self.rows.append(Row(f"resume, first inject {at}", median(first), "s", median(later)))
            if n > cfg.mat_max:
                continue
            mat: list[float] = []
            bare: list[float] = []
            for i in range(cfg.mat_reps):
                agent = nb.resume_session(path, sid, model=self.scripted(), tools=tools)
                for first in ("nb", "bare") if i % 2 else ("bare", "nb"):
                    gc.collect()
                    if first == "nb":
                        mat.append(self.materialize(agent, count))
                    else:
                        bare.append(self.bare_materialize(path, sid, count))
                await agent.close()
                del agent
            # Peak memory, one traced run each (tracemalloc slows Python down; times come from above).
            gc.collect()
            agent = nb.resume_session(path, sid, model=self.scripted(), tools=tools)
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            kept = (agent.events, agent.driver.history())
            nb_peak = tracemalloc.get_traced_memory()[1] - base
            tracemalloc.stop()
            del kept
            await agent.close()
            del agent
            gc.collect()
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            kept2 = self.bare_read(path, sid)
            bare_peak = tracemalloc.get_traced_memory()[1] - base
            tracemalloc.stop()
            del kept2
            gc.collect()
            self.rows.append(
                Row(
                    f"resume materialize all {at}",
                    median(mat),
                    "s",
                    median(bare),
                    "<= 1.2x bare read",
                    median(mat) <= 1.2 * median(bare),
                )
            )
            self.rows.append(Row(f"resume materialize peak mem {at}", nb_peak, "MB", bare_peak))

    # -- 5. cold start ------------------------------------------------------------------------------

    def cold_start(self) -> None:
        """Fresh interpreters, with nbagent's bytecode cached as an installed package has it (this
        checkout's ``__pycache__`` may be absent: the cache goes to a private ``PYTHONPYCACHEPREFIX``,
        written by an untimed run first). When the environment sets ``PYTHONDONTWRITEBYTECODE``, the
        open is also timed as that environment sees it: every start compiles nbagent's source."""
        cfg = self.cfg
        say(f"[5] cold start, {cfg.cold_reps} runs each")
        path = self.dir / "cold.db"
        open_script = (
            "import asyncio, nbagent\n"
            "async def main():\n"
            f"    agent = nbagent.open_session({str(path)!r})\n"
            "    await agent.close()\n"
            "asyncio.run(main())\n"
        )
        scripts = {
            "pass": ["-c", "pass"],
            "version": ["-m", "nbagent", "--version"],
            "import": ["-c", "import nbagent"],
            "open": ["-c", open_script],
        }
        cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = str(self.dir / "pycache")
        runs = [(key, args, cached) for key, args in scripts.items()]
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            runs.append(("open, compiling", scripts["open"], dict(os.environ)))
        for _, args, env in runs:  # creates the file, writes the bytecode cache (untimed)
            subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL, env=env)
        times: dict[str, list[float]] = {key: [] for key, _, _ in runs}
        for _ in range(cfg.cold_reps):
            for key, args, env in runs:
                t0 = perf()
                subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL, env=env)
                times[key].append(perf() - t0)
        bare = median(times["pass"])
        self.rows.append(Row("cold start: python -c pass", bare, "s"))
        version = median(times["version"])
        self.rows.append(
            Row("cold start: nbagent --version", version, "s", bare, "<= 0.15 s", version <= 0.15)
        )
        self.rows.append(Row("cold start: import nbagent", median(times["import"]), "s", bare))
        value = median(times["open"])
        self.rows.append(Row("cold start: import + open_session", value, "s", bare, "<= 0.3 s", value <= 0.3))
        if "open, compiling" in times:
            compiling = median(times["open, compiling"])
            self.rows.append(Row("cold start: import + open, no bytecode cache", compiling, "s", bare))
        self.info.append(f"cold start: load average {os.getloadavg()[0]:.1f}")


async def amain(bench: Bench, only: set[str]) -> None:
    steps: list[tuple[str, Callable[[], Any]]] = [
        ("inject", bench.inject_latency),
        ("throughput", bench.throughput),
        ("loop", bench.loop_overhead),
        ("estimate", bench.estimate_overhead),
        ("resume", bench.resume),
    ]
    for name, fn in steps:
        if not only or name in only:
            await fn()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (well under a minute)")
    parser.add_argument("--tiny", action="store_true", help="a few repetitions of tiny sizes (smoke test)")
    parser.add_argument("--no-assert", action="store_true", help="exit 0 even if a target is missed")
    parser.add_argument("--synchronous", choices=["FULL", "NORMAL", "OFF"], help="sets NBAGENT_SYNCHRONOUS")
    parser.add_argument("--dir", help="where to put the session files (default: a temporary directory)")
    parser.add_argument(
        "--only", action="append", default=[], help="inject|throughput|loop|estimate|resume|cold"
    )
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    if args.synchronous:
        os.environ["NBAGENT_SYNCHRONOUS"] = args.synchronous
    cfg = TINY if args.tiny else QUICK if args.quick else FULL
    workdir = Path(tempfile.mkdtemp(prefix="nbagent-bench-", dir=args.dir))
    started = perf()
    try:
        bench = Bench(cfg, workdir)
        only = set(args.only)
        asyncio.run(amain(bench, only))
        if not only or "cold" in only:
            bench.cold_start()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rows = bench.rows
    print(
        f"nbagent core benchmarks ({cfg.name}); synchronous={bench.sync} for nbagent and the bare baselines; "
        f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}; SQLite {sqlite3.sqlite_version}; "
        f"files in {workdir.parent}; {perf() - started:.0f} s"
    )
    print(_util.table(rows))
    for line in bench.info:
        print("  " + line)
    missed = [r.metric for r in rows if r.ok is False]
    print(f"targets met: {sum(r.ok is True for r in rows)}/{sum(r.ok is not None for r in rows)}")
    if args.json:
        Path(args.json).write_text(json.dumps([r.__dict__ for r in rows], indent=1))
    if missed and not args.no_assert:
        print("missed: " + "; ".join(missed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
