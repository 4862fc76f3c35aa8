"""Turn a model string (``"echo"``, ``"openai:gpt-4.1"``) into a model object, importing lazily."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from nbagent.errors import NbagentError
from nbagent.models.base import Model

ProviderFactory = Callable[[str], Model]

_PROVIDERS: dict[str, str | ProviderFactory] = {
    # prefix -> "module:function" (imported on first use) or a factory; the function takes the
    # part after the colon. Provider modules register themselves here.
    "openai": "nbagent.models.openai_compat:openai_model",
    "ollama": "nbagent.models.openai_compat:ollama_model",
    "deepseek": "nbagent.models.openai_compat:deepseek_model",
    "openai-compatible": "nbagent.models.openai_compat:openai_compatible_model",
    "anthropic": "nbagent.models.anthropic:anthropic_model",
    # a tutorial's recorded answers (nbagent/models/cassette.py): record:openai:gpt-4o-mini, replay:…
    "record": "nbagent.models.cassette:recording_model",
    "replay": "nbagent.models.cassette:replaying_model",
}


def register_provider(prefix: str, factory: str | ProviderFactory) -> None:
    """Make ``"<prefix>:<model>"`` strings resolve through ``factory(model)``."""
    _PROVIDERS[prefix] = factory


def resolve_model(spec: Model | str | None) -> Model:
    """Return a model object for ``spec`` (``None`` means the offline ``"echo"`` default)."""
    if spec is None or spec == "echo":
        from nbagent.models.echo import EchoModel

        return EchoModel()
    if not isinstance(spec, str):
        if not callable(getattr(spec, "stream", None)):
            raise TypeError(f"{spec!r} is not a model: it has no stream(request, signal) method")
        return spec
    prefix, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise NbagentError(
            f"unknown model {spec!r}: use 'echo' or 'provider:model' such as 'openai:gpt-4.1', "
            f"'anthropic:claude-sonnet-4-5', 'ollama:qwen3' (providers: {', '.join(sorted(_PROVIDERS)) or 'none installed'})"
        )
    factory = _PROVIDERS.get(prefix)
    if factory is None:
        raise NbagentError(
            f"unknown model provider {prefix!r} in {spec!r}; known: {', '.join(sorted(_PROVIDERS)) or 'none'}"
        )
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory(rest)
