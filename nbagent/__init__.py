"""nbagent: an LLM agent session living in a Jupyter kernel, logged to SQLite."""

from nbagent.errors import (
    NbagentError,
    ReentrantDeliveryError,
    SessionClosedError,
    SessionLockedError,
)
from nbagent.messages import AssistantMessage, Message, UserMessage

__all__ = [
    "AssistantMessage",
    "Message",
    "NbagentError",
    "ReentrantDeliveryError",
    "SessionClosedError",
    "SessionLockedError",
    "UserMessage",
]
__version__ = "0.1.0"
