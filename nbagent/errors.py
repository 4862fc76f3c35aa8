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
    """A session file cannot be used: not an nbagent file, a newer schema, a directory, no
    permission, a read-only mount, a full disk. The message names the path and the way out."""


class SessionCorruptError(SessionFileError):
    """A stored record or the file itself is damaged or impossible; the session cannot be loaded as is."""


class SessionNotFoundError(NbagentError):
    """No session with that id (or no session at all) is in the file."""


class SessionWriteError(SessionFileError):
    """A durable write failed; nothing of it was recorded."""


class ScriptExhaustedError(NbagentError):
    """A ``ScriptedModel`` received more requests than it has responses."""
