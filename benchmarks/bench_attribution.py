"""Which context mattered (issue #31, SPEC §11.5): ``python benchmarks/bench_attribution.py [--tiny]``.

Prints one table:

- **attribution of a 10-item turn** (echo model, SQLite): ``await agent.attribute(turn=1)`` — a
  plan, 11 forks made before the turn, each replayed (10 with one item dropped, one control), the
  answers read and scored — against **11 plain replays run one after another** (``agent.fork`` +
  ``child.replay`` + ``close``, the same drops), alternating which goes first; goal ≤ 1.5×.
- **rebuild from the store**: ``nbagent.attribution(agent, turn=1)`` over those forks, no run.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _util
from _util import Row, median

import nbagent

perf = time.perf_counter


WORDS = [
    "the",
    "invoice",
    "total",
    "was",
    "paid",
    "in",
    "euros",
    "by",
    "the",
    "customer",
    "after",
    "the",
    "audit",
    "of",
    "last",
    "quarter",
    "while",
    "rates",
    "changed",
    "twice",
    "and",
    "the",
    "ledger",
    "kept",
    "both",
    "amounts",
    "for",
    "each",
    "region",
    "with",
    "notes",
    "on",
    "taxes",
]


def prose(seed: int, n: int = 40) -> str:
    """Text with the repetition of ordinary prose (a small vocabulary, drawn per seed)."""
    pick = random.Random(seed)
    return " ".join(pick.choice(WORDS) for _ in range(n))


async def story(path: Path, items: int) -> tuple[nbagent.Agent, list[str]]:
    """A session (echo model) whose turn 1 claimed ``items`` pieces of context and a followup."""
    agent = nbagent.open_session(path)
    ids = [agent.inject(nbagent.UserMessage.text(f"context {i}: {prose(i)}", {"kind": "note"})).id
           for i in range(items)]  # fmt: skip
    await agent.run("What does the context say?")
    return agent, ids


async def plain_replays(agent: nbagent.Agent, ids: list[str]) -> float:
    t0 = perf()
    for drop in [[], *([i] for i in ids)]:
        child = agent.fork(before_turn=1)
        await child.replay(turn=1, drop=drop)
        await child.close()
    return perf() - t0


async def attribution(agent: nbagent.Agent, items: int) -> float:
    t0 = perf()
    result = await agent.attribute(turn=1)
    elapsed = perf() - t0
    assert len(result.items) == items and result.noise == 0.0
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="small sizes, a few seconds")
    parser.add_argument("--dir", help="where the session files go (default: a temporary directory)")
    args = parser.parse_args()
    items, reps = (3, 2) if args.tiny else (10, 5)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        agent, ids = await story(Path(tmp) / "why.nbagent.sqlite", items)
        ours, plain = [], []
        try:
            for rep in range(reps):
                if rep % 2:
                    plain.append(await plain_replays(agent, ids))
                ours.append(await attribution(agent, items))
                if not rep % 2:
                    plain.append(await plain_replays(agent, ids))
            t0 = perf()
            nbagent.attribution(agent, turn=1)
            rebuild = perf() - t0
        finally:
            await agent.close()
    value, base = median(ours), median(plain)
    rows = [
        Row(
            f"attribution of a {items}-item turn (echo)",
            value,
            "s",
            base,
            f"≤ 1.5x {items + 1} plain replays",
            value <= 1.5 * base,
        ),
        Row("rebuild from the store (no run)", rebuild, "s"),
    ]
    print(_util.table(rows))


if __name__ == "__main__":
    asyncio.run(main())
