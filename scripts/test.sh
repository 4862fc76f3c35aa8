#!/usr/bin/env bash
# Install what the tests need, then run the whole suite (lint, unit, kernel and browser tests).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
# The install builds the JupyterLab extension (labextension/) with Node.js and npm.
command -v npm >/dev/null || (apt-get update -qq && apt-get install -y -qq nodejs npm)
python3 -m pip install -q -e ".[test]"
python3 -m ruff check .
python3 -m ruff format --check .
command -v chromium || (apt-get update -qq && apt-get install -y -qq chromium)
python3 -m pytest -q "$@"
