"""Fixtures shared by the test suite (helpers to import live in ``eventtrace.py``)."""

from __future__ import annotations

import pytest


@pytest.fixture
def db(tmp_path):
    """A fresh session file path beside a pretend notebook."""
    return tmp_path / "session.nbagent.sqlite"
