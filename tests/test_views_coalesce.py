"""The one coalescer of live views: batches in push order, whichever thread pushes or flushes."""

from __future__ import annotations

import asyncio
import threading

from nbagent.views import Coalescer


async def test_items_pushed_on_a_loop_are_handed_over_together_after_the_delay() -> None:
    batches: list[list[int]] = []
    batch = Coalescer(batches.append, delay=0.01)
    for i in range(5):
        batch.push(i)
    assert batches == []
    while not batches:
        await asyncio.sleep(0.005)
    assert batches == [[0, 1, 2, 3, 4]]


def test_without_a_running_loop_each_item_is_handed_over_at_once() -> None:
    batches: list[list[str]] = []
    batch = Coalescer(batches.append)
    batch.push("a")
    batch.push("b")
    assert batches == [["a"], ["b"]]


def test_flushes_from_another_thread_keep_the_push_order() -> None:
    seen: list[int] = []
    batch = Coalescer(seen.extend, delay=0.001)
    loop = asyncio.new_event_loop()
    done = threading.Event()

    async def pushes() -> None:
        for i in range(600):
            batch.push(i)
            if i % 20 == 0:
                await asyncio.sleep(0)
        await asyncio.sleep(0.01)
        done.set()

    runner = threading.Thread(target=lambda: loop.run_until_complete(pushes()))
    runner.start()
    while not done.wait(0.0002):
        batch.flush_now()  # the kernel's main thread taking a snapshot while the loop pushes
    runner.join()
    loop.close()
    batch.flush_now()
    assert seen == list(range(600))


async def test_held_items_wait_for_the_next_flush_and_soon_flushes_at_the_loops_next_turn() -> None:
    batches: list[list[str]] = []
    batch = Coalescer(batches.append, delay=3600)  # a timed flush would never come within the test
    batch.push("queued", hold=True)
    await asyncio.sleep(0)
    assert batches == []
    batch.push("claimed")  # scheduled an hour from now
    batch.push("ended", soon=True)  # replaces that timer with one at the next turn
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert batches == [["queued", "claimed", "ended"]]
    batch.flush_now()
    assert batches == [["queued", "claimed", "ended"]]  # nothing buffered: no empty flush
    batch.flush_now(always=True)
    assert batches[-1] == []


async def test_a_fresh_context_flush_does_not_see_the_pushers_context_variables() -> None:
    import contextvars

    current: contextvars.ContextVar[str] = contextvars.ContextVar("current", default="none")
    seen: list[str] = []
    plain = Coalescer(lambda _items: seen.append(current.get()), delay=0)
    fresh = Coalescer(lambda _items: seen.append(current.get()), delay=0, fresh_context=True)
    current.set("cell 3")
    plain.push(1, soon=True)
    fresh.push(1, soon=True)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert seen == ["cell 3", "none"]
