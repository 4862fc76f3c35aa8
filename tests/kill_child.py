"""The process the kill campaign kills (``tests/test_kill_campaign.py``); run as a script.

``python kill_child.py DB [SESSION_ID] --kill-at POINT --nth N`` runs a realistic session (context
injected from the loop and from a worker thread, followups whose turns call tools and stream
answers, a clean close) and prints one line per fact the parent needs:

- ``ack <message id>`` right after a delivery returned: the caller was told it is durable;
- ``at <point> <k>`` when the k-th occurrence of a kill point is reached. At the chosen one the
  process stops right there (before the next statement) so the parent's SIGKILL lands exactly.

Kill points: ``before-commit`` (a ``COMMIT``, or an ``INSERT`` that is its own transaction, is
about to run), ``after-commit`` (a write
returned, before its caller goes on), ``mid-tool``, ``mid-stream``, ``checkpoint`` (the clean
close's WAL checkpoint is about to run), ``repair`` (resume is about to commit its repair).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from collections import Counter

import nbagent
import nbagent.store.sqlite.store as sqlite_store
from nbagent.models import Finish, TextDelta, ToolCallChunk

seen: Counter[str] = Counter()
out_lock = threading.Lock()
target: tuple[str, int] = ("", 0)
repairing = threading.local()


def say(line: str) -> None:
    with out_lock:  # threads print too: keep each line whole
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def point(name: str) -> None:
    with out_lock:
        seen[name] += 1
        k = seen[name]
    say(f"at {name} {k}")
    if (name, k) == target:
        threading.Event().wait()  # parked here until the parent's SIGKILL


def ack(message: nbagent.UserMessage) -> None:
    say(f"ack {message.id}")


def instrument() -> None:
    """Kill points inside the store: every connection traces its statements."""
    connect = sqlite_store._connect

    def traced(path, query):
        conn = connect(path, query)

        def trace(statement: str) -> None:
            if statement == "COMMIT" or (statement.startswith("INSERT") and not conn.in_transaction):
                point("repair" if getattr(repairing, "on", False) else "before-commit")
            elif statement.startswith("PRAGMA wal_checkpoint"):
                point("checkpoint")

        conn.set_trace_callback(trace)
        return conn

    sqlite_store._connect = traced
    write = sqlite_store.SessionFile._write

    def written(self, rows, session):
        write(self, rows, session)
        point("after-commit")

    sqlite_store.SessionFile._write = written


class Scripted:
    """Answers each prompt with a tool call, then with text streamed in pieces."""

    name = "kill-campaign"

    async def stream(self, request, signal):
        last = request.messages[-1]
        if last.source.get("kind") == "tool":
            for piece in ("The ", "answer ", "streams ", "in ", "pieces."):
                yield TextDelta(piece)
                if piece == "streams ":
                    point("mid-stream")
                await asyncio.sleep(0)
            yield Finish("stop")
        else:
            yield ToolCallChunk(f"call-{request.log_length}", "work", '{"n": 3}')
            yield Finish("tool-calls")


def work(n: int) -> str:
    """Does some work."""
    point("mid-tool")
    return "worked " * n


async def main() -> None:
    global target
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("session", nargs="?")
    parser.add_argument("--kill-at", default="")
    parser.add_argument("--nth", type=int, default=1)
    args = parser.parse_args()
    target = (args.kill_at, args.nth)
    instrument()
    if args.session:
        repairing.on = True
        agent = nbagent.resume_session(args.db, args.session, model=Scripted(), tools=[work])
        repairing.on = False
    else:
        agent = nbagent.open_session(args.db, model=Scripted(), tools=[work])
    say(f"session {agent.session_id}")

    def from_a_thread(tag: str) -> None:
        for i in range(3):
            ack(agent.inject(nbagent.UserMessage.text(f"{tag} {i}", source={"kind": "cell"})))

    for turn in range(2):
        ack(agent.inject(nbagent.UserMessage.text(f"context {turn}", source={"kind": "cell"})))
        ack(agent.followup(f"prompt {turn}"))
        worker = threading.Thread(target=from_a_thread, args=(f"thread {turn}",))
        worker.start()
        await asyncio.to_thread(worker.join)
        await agent.when_idle()
    await agent.close()
    say("done")


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
