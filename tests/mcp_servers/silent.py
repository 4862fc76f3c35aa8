"""An MCP "server" that starts and never answers anything (not even ``initialize``)."""

import time

while True:
    time.sleep(3600)
