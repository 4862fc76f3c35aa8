"""Message ids: random version-4 UUIDs, unique, drawn without a system call per message (so many
threads injecting at once do not each hand the GIL over for it, issue #20), never repeated by a
``random.seed()`` in user code, and different in a forked process."""

from __future__ import annotations

import os
import random
import uuid

import pytest

from nbagent import UserMessage


def test_ids_are_unique_version_4_uuids():
    ids = [UserMessage.text("x").id for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    for value in ids[:100]:
        parsed = uuid.UUID(value)
        assert (parsed.version, parsed.variant) == (4, uuid.RFC_4122)
        assert str(parsed) == value


def test_making_a_message_makes_no_system_call_for_its_id(monkeypatch):
    def refuse(n: int) -> bytes:
        raise AssertionError("os.urandom was called for a message id")

    monkeypatch.setattr(os, "urandom", refuse)
    assert UserMessage.text("a").id != UserMessage.text("b").id


def test_seeding_the_global_random_does_not_repeat_ids():
    random.seed(0)
    first = UserMessage.text("x").id
    random.seed(0)
    assert UserMessage.text("x").id != first


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_process_draws_other_ids():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        os.write(write, "\n".join(UserMessage.text("x").id for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    ours = {UserMessage.text("x").id for _ in range(50)}
    with os.fdopen(read) as f:
        theirs = set(f.read().split())
    os.waitpid(pid, 0)
    assert len(theirs) == 50 and not ours & theirs
