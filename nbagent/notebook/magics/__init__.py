"""The magics (``%inject``, ``%followup``, ``%steer``, ``%agent``) and what their cells say and show.

:mod:`~nbagent.notebook.magics.agent_magics` holds the verbs; each ``%agent`` command family has its
own module (``*_commands``), and :mod:`~nbagent.notebook.magics.live_turn` is the live turn display a
``%followup`` or ``%steer`` cell shows. Importing this package imports none of them.
"""
