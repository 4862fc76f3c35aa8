#!/usr/bin/env bash
# Install what the tests need, then run the whole suite (lint, unit, kernel and browser tests).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
python3 -m pip install -q -e ".[test]"
python3 -m ruff check .
python3 -m ruff format --check .
command -v chromium || (apt-get update -qq && apt-get install -y -qq chromium)
# The PostgreSQL store's tests start a throwaway server (tests/pg_server.py) from Debian's binaries;
# without them (and not root to install them) those tests skip, saying why.
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && ! command -v initdb >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq postgresql) || echo "scripts/test.sh: could not install postgresql"
  fi
fi
python3 -m pytest -q "$@"
