"""Forks, what-if replays and turn diffs (SPEC §11): the feature that drives an agent from outside.

- ``log_prefix.py`` copies a parent's events ``0..S`` into a child, page by page (§11.1);
- ``new_fork.py`` finds S (before a turn, or a quiet seq), copies the prefix and writes
  ``session/forked`` (§11.1);
- ``replay.py`` re-enacts the parent's turn N in a fork with its arrivals edited (§11.2);
- ``sessions.py`` opens the child as an agent (``fork_session``) and diffs two turns (``diff``, §11.3);
- ``attribution.py`` ranks a turn's context by replays that leave one item out, against a control
  (``Agent.attribution_plan``, ``Agent.attribute``, ``nbagent.attribution``, §11.5).

Nothing here is imported by ``nbagent.core``: :class:`nbagent.agent.Agent` offers these as methods.
"""
