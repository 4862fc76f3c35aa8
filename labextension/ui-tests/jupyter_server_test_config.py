"""The JupyterLab server of the Galata UI tests (Galata's test configuration: no token, no XSRF
check, the app exposed in the page), offline, on the port and root that playwright.config.js chose.

Never use this configuration for anything else: it opens the server to anyone who can reach it.
"""

import os

from jupyterlab.galata import configure_jupyter_server

configure_jupyter_server(c)  # noqa: F821 (`c` is the configuration Jupyter passes in)
c.ServerApp.ip = "127.0.0.1"  # noqa: F821
c.ServerApp.port = int(os.environ.get("NBAGENT_UI_TESTS_PORT", "8888"))  # noqa: F821
c.LabApp.extension_manager = "readonly"  # noqa: F821 (no extension index to query)
if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI and this machine's sessions run as root
    c.ServerApp.allow_root = True  # noqa: F821
