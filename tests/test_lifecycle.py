"""The driver's life, one transition at a time (``nbagent/core/lifecycle.py``; SPEC §1, §3.2, §3.6)."""

from __future__ import annotations

import asyncio

from eventtrace import run

from nbagent.core.lifecycle import DriverState, Lifecycle
from nbagent.core.signal import CancelSignal


def life() -> tuple[Lifecycle, list[str]]:
    published: list[str] = []
    return Lifecycle(published.append), published


def signal() -> CancelSignal:
    return CancelSignal(asyncio.get_running_loop())


def test_a_new_life_is_idle_and_publishes_nothing():
    lc, published = life()
    assert lc.state is DriverState.IDLE and lc.status == "idle"
    assert lc.idle and not lc.driving and not lc.closing and not lc.stopping
    assert lc.signal is None and lc.task is None and lc.fault is None
    assert published == []


async def test_begin_and_converge_alternate_running_and_idle_and_never_publish_twice():
    lc, published = life()
    first = signal()
    lc.begin(first)
    assert lc.state is DriverState.RUNNING and lc.signal is first and lc.driving and not lc.idle
    second = signal()
    lc.renew(second)  # the next queued turn: still running, nothing published
    assert lc.signal is second
    assert lc.converge() is True
    assert lc.state is DriverState.IDLE and lc.signal is None and lc.task is None and lc.idle
    assert lc.converge() is True  # a second convergence publishes nothing new
    assert published == ["running", "idle"]


async def test_a_latch_is_set_only_while_idle_or_running_kept_by_convergence_and_consumed_by_begin():
    lc, published = life()
    lc.begin(signal())
    lc.latch()
    assert lc.latched and not lc.idle
    assert lc.converge() is True
    assert lc.latched and lc.status == "idle"  # the restart that consumes it is the driver's
    lc.begin(signal())
    assert lc.state is DriverState.RUNNING
    lc.latch()
    lc.drop_latch()  # while driving: back to running
    assert lc.state is DriverState.RUNNING
    lc.converge()
    lc.latch()
    lc.drop_latch()  # while idle: back to idle
    assert lc.state is DriverState.IDLE and lc.idle
    assert published == ["running", "idle", "running", "idle"]


async def test_aborting_is_a_cancelled_running_turn():
    lc, _ = life()
    assert not lc.aborting
    s = signal()
    lc.begin(s)
    assert not lc.aborting
    s.mark("user")
    assert lc.aborting


async def test_a_cancel_since_the_start_is_seen_until_the_next_start():
    lc, _ = life()
    lc.begin(signal())
    assert lc.uncancelled
    lc.cancelled()
    assert not lc.uncancelled
    lc.converge()
    lc.begin(signal())
    assert lc.uncancelled


def test_wakes_in_flight_keep_the_life_from_idle():
    lc, _ = life()
    lc.wake_sent()
    lc.wake_sent()
    assert not lc.idle
    lc.wake_arrived()
    assert not lc.idle
    lc.wake_arrived()
    assert lc.idle


def test_a_deferred_clear_is_taken_once():
    lc, _ = life()
    assert lc.take_deferred_clear() is False
    lc.defer_clear()
    assert lc.take_deferred_clear() is True
    assert lc.take_deferred_clear() is False


def test_the_first_fault_stays_and_stops_the_driver():
    lc, _ = life()
    first, second = OSError("disk"), OSError("again")
    assert lc.fail(first) is True
    assert lc.fail(second) is False
    assert lc.fault is first and lc.stopping and not lc.closing


def test_the_first_turn_waits_for_the_session_start_listeners():
    async def main() -> None:
        lc, _ = life()
        assert lc.ready(listeners=False)  # none: the first turn opens at once
        lc2, _ = life()
        lc2.session_starting()
        assert not lc2.ready(listeners=True)
        waiting = asyncio.ensure_future(lc2.wait_started())
        await asyncio.sleep(0)
        assert not waiting.done()
        lc2.session_started()
        await waiting
        assert lc2.ready(listeners=True)  # later starts do not wait again

    run(main())


def test_closing_cancels_the_turn_and_the_session_start_then_shuts_once():
    async def main() -> None:
        lc, published = life()
        loop = asyncio.get_running_loop()
        s = CancelSignal(loop)
        lc.begin(s)
        lc.session_starting()
        start = loop.create_task(asyncio.sleep(60))
        lc.session_start_running(start)

        async def turn() -> None:
            await s.wait()
            lc.converge()  # the driver task's end while closing: no "idle"

        lc.run(loop.create_task(turn()))
        lc.latch()
        waiter = loop.create_task(lc.wait_idle(loop))
        await asyncio.sleep(0)
        await lc.wind_down()
        assert lc.state is DriverState.CLOSING and lc.closing and not lc.closed and lc.stopping
        assert s.cause == "closed" and start.cancelled() and lc.task is None and lc.signal is None
        lc.latch()  # no latch once closing
        assert lc.state is DriverState.CLOSING
        released: list[str] = []
        lc.shut(lambda: released.append(lc.status))
        assert lc.closed and released == ["running"]  # released before "closed" is published
        await waiter
        assert published == ["running", "closed"]

    run(main())


def test_when_idle_resolves_on_convergence():
    async def main() -> None:
        loop = asyncio.get_running_loop()
        lc, _ = life()
        await lc.wait_idle(loop)  # idle now: returns at once
        lc.begin(CancelSignal(loop))
        waiter = loop.create_task(lc.wait_idle(loop))
        await asyncio.sleep(0)
        assert not waiter.done()
        lc.converge()
        lc.maybe_idle()
        await waiter

    run(main())
