"""Backends by name. Each entry is a small function that imports its module (and heavy SDK) lazily,
so ``import judge`` never imports torch, vllm or openai."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..config import GenerateConfig
from ..errors import UnknownNameError
from .base import Backend

BackendFactory = Callable[..., Backend]
_REGISTRY: dict[str, BackendFactory] = {}


def register_backend(name: str) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: register ``factory(model: str | None, config: GenerateConfig, **options) -> Backend``."""

    def deco(factory: BackendFactory) -> BackendFactory:
        _REGISTRY[name] = factory
        return factory

    return deco


def backend_names() -> list[str]:
    return sorted(_REGISTRY)


def create_backend(
    name: str = "llamacpp", model: str | None = None, config: GenerateConfig | None = None, **options: Any
) -> Backend:
    """Build a backend by registered name; ``model`` is a path, hub id or API model name."""
    if name not in _REGISTRY:
        raise UnknownNameError("backend", name, _REGISTRY)
    return _REGISTRY[name](model, config or GenerateConfig(), **options)


@register_backend("llamacpp")
def _llamacpp(model: str | None, config: GenerateConfig, **options: Any) -> Backend:
    from .llamacpp import LlamaCppBackend

    return LlamaCppBackend(model, config, **options)


@register_backend("openai")
def _openai(model: str | None, config: GenerateConfig, **options: Any) -> Backend:
    from .openai_api import OpenAIBackend

    return OpenAIBackend(model, config, **options)


@register_backend("transformers")
def _transformers(model: str | None, config: GenerateConfig, **options: Any) -> Backend:
    from .hf import TransformersBackend

    return TransformersBackend(model, config, **options)


register_backend("hf")(_transformers)


@register_backend("vllm")
def _vllm(model: str | None, config: GenerateConfig, **options: Any) -> Backend:
    from .vllm import VLLMBackend

    return VLLMBackend(model, config, **options)
