"""An MCP "server" that fails at start, saying why on stderr."""

import sys

print("demo-broken: DEMO_TOKEN is not set; cannot log in", file=sys.stderr)
sys.exit(2)
