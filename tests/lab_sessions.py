"""Real session files for the lab extension's tests and benchmark, written by real agents.

Sessions are written on a thread of their own (``asyncio.run`` there), so a caller with an event
loop of its own (a Jupyter server fixture) is left alone; :data:`WRITER` is a script that a
second process runs to write a session while a test reads it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

XSS = '<img src=x onerror="window.__nbagent_xss=1"></dataframe><script>window.__nbagent_xss=2</script>'
"""Text that would run or break out if any painter treated message content as HTML."""


async def _write(path: Path, prompts: Sequence[str], context: str | None, title: str | None) -> str:
    import nbagent
    from nbagent.context import cell_text

    agent = nbagent.open_session(path, model="echo", title=title)
    if context is not None:
        agent.inject(cell_text(context, label="notes"))
    for prompt in prompts:
        await agent.run(prompt)
    sid = agent.session_id
    await agent.close()
    return sid


def write_session(
    path: Path, prompts: Sequence[str], *, context: str | None = None, title: str | None = None
) -> str:
    """A session in ``path`` (created if missing): ``context`` injected, then one turn per prompt
    answered by the offline echo model. Returns its id."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _write(path, prompts, context, title)).result()


async def _family(path: Path) -> tuple[str, str]:
    import nbagent
    from nbagent.models import ScriptedModel

    parent = nbagent.open_session(path, model=ScriptedModel(["first answer", "second answer", "third"]))
    for prompt in ("Where do sales come from?", "And returns?", "And refunds?"):
        await parent.run(prompt)
    sid = parent.session_id
    await parent.close()
    model = ScriptedModel(["a different second answer", "by region"])
    child = nbagent.fork_session(path, sid, before_turn=2, model=model)
    await child.run("And returns, by region?")  # after the carried-over "And returns?"
    cid = child.session_id
    await child.close()
    return sid, cid


def write_family(path: Path) -> tuple[str, str]:
    """A parent session of three turns and its fork before turn 2 (two turns of its own), in
    ``path``. Returns (parent id, fork id)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _family(path)).result()


def write_synthetic(
    path: Path, turns: int, pending: int = 0, titles: dict[int, str] | None = None
) -> tuple[str, int]:
    """A session of ``turns`` whole turns and then ``pending`` notes left in next-step, written
    straight into the file with the store's own writer (as the benchmarks build long histories:
    the rows real ``ScriptedModel`` turns write); turn ``t`` of ``titles`` is prompted with its
    text instead of the benchmark's prompt. Returns (id, event count)."""
    import time
    import uuid

    from nbagent import _json
    from nbagent.store.sqlite.store import SessionFile

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from _util import synth_turn

    sid = uuid.uuid4().hex
    now = int(time.time() * 1000)
    rows: list[tuple[object, ...]] = []
    for turn in range(1, turns + 1):
        events = synth_turn(turn, header=turn == 1)
        if titles and turn in titles:
            prompt = next(data for type_, data, _ in events if type_ == "user/message")
            prompt["content"][0]["text"] = titles[turn]  # the splice holds the same prompt
        for type_, data, inbox in events:
            rows.append((sid, len(rows), now, type_, _json.dumps(data), inbox))
    for i in range(pending):
        note = {"id": uuid.uuid4().hex, "role": "user", "content": [{"type": "text", "text": f"note {i}"}],
                "source": {"kind": "cell", "label": f"n{i}"}}  # fmt: skip
        splice = {"target": "next-step", "start": i, "inserted": [note]}
        rows.append((sid, len(rows), now, "agent/inbox/spliced", _json.dumps(splice), i + 1))
    file = SessionFile(path)
    try:
        file.write([], session=(sid, now, None, None, None, "scripted", "{}"))
        file.write(rows)
    finally:
        file.close()
    return sid, len(rows)


WRITER = """
import asyncio, sys
import nbagent
from nbagent.context import cell_text

async def main(path, count):
    agent = nbagent.open_session(path, model="echo")
    print(agent.session_id, flush=True)
    for i in range(count):
        agent.inject(cell_text(f"context {i}", label=f"n{i}"))
        if i % 10 == 9:
            await agent.run(f"prompt {i}")
    await agent.close()
    print("done", flush=True)

asyncio.run(main(sys.argv[1], int(sys.argv[2])))
"""


def writer_command(path: Path, count: int) -> list[str]:
    """A second process that writes ``count`` injects (and a turn every ten) into a new session,
    printing the session id first and ``done`` last."""
    return [sys.executable, "-c", WRITER, str(path), str(count)]
