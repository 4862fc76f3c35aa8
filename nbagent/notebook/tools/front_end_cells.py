"""Asking the front end for the open notebook's cells, for ``read_notebook`` (SPEC §9.7).

The kernel opens a comm with target ``nbagent.notebook`` and the data ``{"request": "cells"}``. A front
end that knows the target (nbagent's lab extension: labextension/src/livedoc.ts) answers once on that comm with::

    {"cells": [{"cell_type": "markdown" | "code" | "raw", "source": str,
                "execution_count": int | null, "outputs": [nbformat outputs]}, ...],
     "path": "dir/notebook.ipynb", "dirty": true | false}

``{"request": "hello"}`` asks what the front end does itself: nbagent's lab extension answers
``{"inserts": true}`` (it inserts proposed cells, so the kernel does not offer them as the next input).

JupyterLab closes a comm whose target nobody registered, and then the saved file is read at once;
a front end that says nothing (nbclient, a busy kernel that cannot read the answer) is waited for
``timeout`` seconds at most. The answer is data: it is bounded and scrubbed like the saved file's
cells and never executed.
"""

from __future__ import annotations

import threading
from typing import Any

TARGET = "nbagent.notebook"
CELLS, HELLO = "cells", "hello"
"""The requests: the open notebook's cells; whether the front end inserts proposed cells itself."""
TIMEOUT = 1.5
"""Seconds ``read_notebook`` waits for the front end before it reads the saved file."""


def ask_front_end(timeout: float | None = None) -> dict[str, Any] | None:
    """The front end's answer (see the module doc), or ``None`` when it does not answer within
    ``timeout`` seconds (by default :data:`TIMEOUT`, read when asked), closes the comm, or no kernel can
    open one. Blocks the calling thread (a tool's worker thread)."""
    data = ask(CELLS, TIMEOUT if timeout is None else timeout)
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return None
    return data


def front_end_inserts(timeout: float | None = None) -> bool:
    """Whether the front end inserts proposed cells itself (nbagent's lab extension answers
    ``{"request": "hello"}`` with ``{"inserts": true}``); ``False`` when nobody says so within
    ``timeout`` seconds (by default :data:`TIMEOUT`, read when asked)."""
    data = ask(HELLO, TIMEOUT if timeout is None else timeout)
    return isinstance(data, dict) and data.get("inserts") is True


def ask(request: str, timeout: float = TIMEOUT) -> Any:
    """The data of the front end's first message on a comm opened with ``{"request": request}``, or
    ``None`` (no answer in time, the comm closed, no kernel). Blocks the calling thread."""
    try:
        from comm import create_comm

        answered = threading.Event()
        box: dict[str, Any] = {}

        def on_msg(msg: dict[str, Any]) -> None:
            box.setdefault("data", msg.get("content", {}).get("data"))
            answered.set()

        channel = create_comm(target_name=TARGET, data={"request": request})
    except Exception:  # no kernel, no comm manager: nobody to ask
        return None
    channel.on_msg(on_msg)
    channel.on_close(lambda _msg: answered.set())
    try:
        answered.wait(timeout)
    finally:
        try:
            channel.close()
        except Exception:
            pass
    return box.get("data")
