"""Models: the protocol, the offline ``EchoModel`` and ``ScriptedModel``, and provider strings."""

from nbagent.log.vocabulary import Failure
from nbagent.models.base import (
    Chunk,
    Finish,
    Model,
    ModelError,
    ModelRequest,
    ReasoningDelta,
    TextDelta,
    ToolCallChunk,
    Usage,
)
from nbagent.models.echo import EchoModel
from nbagent.models.registry import register_provider, resolve_model
from nbagent.models.scripted import Response, ScriptedModel, ToolCall

__all__ = [
    "Chunk",
    "EchoModel",
    "Failure",
    "Finish",
    "Model",
    "ModelError",
    "ModelRequest",
    "ReasoningDelta",
    "Response",
    "ScriptedModel",
    "TextDelta",
    "ToolCall",
    "ToolCallChunk",
    "Usage",
    "register_provider",
    "resolve_model",
]
