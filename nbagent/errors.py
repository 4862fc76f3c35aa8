"""The small error hierarchy of nbagent: every message names the cause and the remedy."""

from __future__ import annotations


class NbagentError(Exception):
    """Base class of every error nbagent raises on purpose."""


class SessionLockedError(NbagentError):
    """Another live writer (process or agent) holds the session's lease."""


class SessionClosedError(NbagentError):
    """The agent was closed; deliveries and inbox mutations are refused."""


class ReentrantDeliveryError(NbagentError):
    """A delivery or inbox mutation was attempted from inside an ``"event"`` callback."""


class SessionFileError(NbagentError):
    """The SQLite file is not an nbagent session file, or is of a newer schema."""


class SessionCorruptError(NbagentError):
    """A stored record is damaged or impossible; the session cannot be loaded as is."""


class SessionNotFoundError(NbagentError):
    """No session with that id (or no session at all) is in the file."""


class SessionWriteError(NbagentError):
    """A durable write failed; nothing of it was recorded."""


class ScriptExhaustedError(NbagentError):
    """A ``ScriptedModel`` received more requests than it has responses."""
