"""A replay's edit in words (SPEC §11.2): "replay of turn 2: note seen by step 1, steer dropped".

The timeline shows it on the replayed turn, and the Agent sessions panel names an unnamed fork by
its last replay, so a parent and its forks no longer look alike. Steps are counted as people count
them: "seen by step N" is the first request that holds the message (the record's ``step`` + 1).
"""

from __future__ import annotations

from nbagent.log.events import SessionReplayed
from nbagent.views.text import clip

REPLAY_TEXT_MAX = 160


def replay_text(r: SessionReplayed) -> str:
    """What the replay changed, one clause per edit; ``unedited`` when it changed nothing."""

    def name(message_id: str) -> str:
        return r.labels.get(message_id) or f"message {message_id[:8]}"

    parts = [f"{name(i)} seen by step {int(step) + 1}" for i, step in r.move.items()]
    for a in r.add:
        mid = str(a.get("id", ""))
        parts.append(f"{name(mid)} added, seen by step {int(a.get('step', 0)) + 1}")
    parts += [f"{name(i)} dropped" for i in r.drop]
    head = f"replay of turn {r.parent_turn}"
    return clip(f"{head}: {', '.join(parts)}" if parts else f"{head}, unedited", REPLAY_TEXT_MAX)
