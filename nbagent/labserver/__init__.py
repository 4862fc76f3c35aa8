"""The Jupyter server extension behind the "Agent sessions" panel and the timeline tab.

Enabled on install (``jupyter-config/server-config/nbagent.json``); it adds the read-only REST
API of :mod:`nbagent.labserver.handlers` under ``<base_url>nbagent/api/``, over the session files
under the contents root and the PostgreSQL stores its configuration names
(:mod:`nbagent.labserver.databases`: ``c.NbagentServer.databases``). Jupyter imports it by
module name; nothing of Jupyter is imported until the server loads it.
"""

from __future__ import annotations

from typing import Any


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "nbagent.labserver"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    from nbagent.labserver.databases import DATABASE_READS, SETTING, Databases
    from nbagent.labserver.handlers import make_executor, routes
    from nbagent.labserver.labels import Labels
    from nbagent.labserver.sessions import TimelineCache
    from nbagent.labserver.window import WindowCache

    web_app = serverapp.web_app
    web_app.settings["nbagent_timelines"] = TimelineCache()
    web_app.settings["nbagent_windows"] = WindowCache()
    web_app.settings["nbagent_labels"] = Labels()
    web_app.settings["nbagent_executor"] = make_executor()
    web_app.settings["nbagent_list_executor"] = make_executor("nbagent-list")
    web_app.settings[DATABASE_READS] = make_executor("nbagent-db")
    databases = web_app.settings[SETTING] = Databases.from_config(serverapp)
    web_app.add_handlers(".*$", routes(web_app.settings["base_url"]))
    hide_session_side_files(serverapp)
    serverapp.log.info(
        "nbagent: read-only session API at %snbagent/api/sessions; databases: %s",
        web_app.settings["base_url"],
        databases.shown(),
    )


SIDE_FILES: tuple[str, ...] = ("*.nbagent.sqlite-wal", "*.nbagent.sqlite-shm", "*.nbagent.sqlite-journal")
SIDE_FILES += tuple(g.replace("*.", "", 1) for g in SIDE_FILES)  # the shared nbagent.sqlite's
"""SQLite's companions of a session file: the file browser need not show them (the log is whole in
the ``.sqlite`` after a clean close, and a copy of one without the other is no backup)."""


def hide_session_side_files(serverapp: Any) -> None:
    """Add :data:`SIDE_FILES` to the contents manager's ``hide_globs`` for this server (the user's
    configuration files are not touched; a user who lists them in ``hide_globs`` keeps the rest)."""
    manager = getattr(serverapp, "contents_manager", None)
    globs = getattr(manager, "hide_globs", None)
    if manager is None or not isinstance(globs, list):
        return
    manager.hide_globs = [*globs, *(g for g in SIDE_FILES if g not in globs)]


# The names Jupyter Server looks up (older servers used the unprefixed one).
load_jupyter_server_extension = _load_jupyter_server_extension
