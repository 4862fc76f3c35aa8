"""The notebook surface, in three rooms: the magics and what their cells show (:mod:`.magics`), the
kernel's built-in tools and their approvals (:mod:`.tools`), and the kernel plumbing: the kernel's
one session, its threads, where its file lives, how the kernel is run (:mod:`.kernel`).

``%load_ext nbagent`` calls :func:`load_ipython_extension`; nothing heavier than IPython's magic
machinery is imported until a magic runs.

The kernel's agent runs on one asyncio loop in a background thread (SPEC §9.0); the kernel's own
loop is never re-entered. :func:`current_kernel_session` gives that loop (``.agent_loop``) and the hand-over
to the kernel's main thread (``.main_thread``, :mod:`nbagent.notebook.kernel.main_thread`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbagent.agent import Agent
    from nbagent.notebook.kernel.kernel_session import KernelSession

__all__ = ["current_agent", "current_kernel_session", "load_ipython_extension", "unload_ipython_extension"]


def current_agent() -> Agent:
    """The agent the magics of this kernel use, opened or resumed as the first magic would.

    For what the magics do not cover: ``current_agent().set_model(ScriptedModel([...]))``,
    ``current_agent().add_tool(t)``, hooks. The agent lives on the agent loop, not on the kernel's:
    to await one of its coroutines from a cell, hand it over with
    ``await asyncio.wrap_future(current_kernel_session().agent_loop.submit(agent.run("...")))``.
    """
    agent = current_kernel_session().ensure()
    assert agent is not None
    return agent


def current_kernel_session() -> KernelSession:
    """The kernel's session holder: ``.agent_loop`` (the loop the agent runs on), ``.main_thread``
    (runs callables on the kernel's main thread for the agent), ``.current()`` (the open agent)."""
    from nbagent.notebook.kernel.kernel_session import current_kernel_session as current

    return current()


def load_ipython_extension(ipython: Any) -> None:
    """Register the ``%inject``, ``%followup``, ``%steer`` and ``%agent`` magics."""
    from nbagent.notebook.magics.agent_magics import AgentMagics
    from nbagent.notebook.magics.question_marks import keep_question_marks

    if _instance(ipython) is not None:
        return
    ipython.register_magics(AgentMagics(ipython))
    ipython.input_transformers_cleanup.append(keep_question_marks)


def unload_ipython_extension(ipython: Any) -> None:
    """Close the session and remove the magics (``%unload_ext``)."""
    magics = _instance(ipython)
    if magics is None:
        return
    from nbagent.notebook.magics.question_marks import keep_question_marks

    magics.unload()
    if keep_question_marks in ipython.input_transformers_cleanup:
        ipython.input_transformers_cleanup.remove(keep_question_marks)
    manager = ipython.magics_manager
    for kind in ("line", "cell"):
        table = manager.magics[kind]
        for name in [n for n, fn in table.items() if getattr(fn, "__self__", None) is magics]:
            del table[name]
    manager.registry.pop(type(magics).__name__, None)


def _instance(ipython: Any) -> Any:
    return ipython.magics_manager.registry.get("AgentMagics")
