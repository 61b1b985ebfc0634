"""Backends by name, through the shared registry: each built-in entry names its class as a string,
so ``import judge`` never imports torch, vllm or openai."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ..core.config import GenerateConfig
from ..core.registry import Registry
from .base import Backend

if TYPE_CHECKING:
    from .batching import Batcher

#: ``factory(model: str | None, config: GenerateConfig, **options) -> Backend``.
BackendFactory = Callable[..., Backend]
BACKENDS: Registry[BackendFactory] = Registry("backend", "judge.backends")
BACKENDS.register_lazy("llamacpp", "judge.backends.llamacpp:LlamaCppBackend")
BACKENDS.register_lazy("openai", "judge.backends.openai_api:OpenAIBackend")
BACKENDS.register_lazy("transformers", "judge.backends.hf:TransformersBackend")
BACKENDS.register_lazy("hf", "judge.backends.hf:TransformersBackend")
BACKENDS.register_lazy("vllm", "judge.backends.vllm:VLLMBackend")
BACKENDS.register_lazy("mock", "judge.backends.mock:MockBackend")

#: The layers around a backend, each registered by the backend's name (built-in entries as strings, so that
#: nothing is imported until a run asks for one):
#: ``--check``'s replays, ``replay(model, config, **options) -> Backend``: the backend's twin that answers with
#: placeholders and counts what the backend would evaluate or send (its class declares ``cost`` "replay" or
#: "hosted");
REPLAYS: Registry[BackendFactory] = Registry("replay", "judge.replays")
REPLAYS.register_lazy("llamacpp", "judge.backends.llamacpp_replay:LlamaCppReplay")
REPLAYS.register_lazy("openai", "judge.backends.openai_replay:OpenAIReplay")
#: provider batch drivers, ``batcher(options) -> Batcher | None``: what answers a run's label requests in bulk
#: before it scores, when the backend's options ask for it (:mod:`judge.backends.batching`).
BatcherFactory = Callable[[Mapping[str, Any]], "Batcher | None"]
BATCHERS: Registry[BatcherFactory] = Registry("batch API", "judge.batchers")
BATCHERS.register_lazy("openai", "judge.backends.openai_batch:batcher")
#: cost layers, ``meter(backend) -> Backend``: the backend with what its answers cost priced and capped by its
#: options (``--max-cost``), put around it wherever it is built (:func:`create_backend`).
LayerFactory = Callable[[Any], Backend]
METERS: Registry[LayerFactory] = Registry("cost layer", "judge.meters")
METERS.register_lazy("openai", "judge.backends.priced:Priced")

#: Backends that read a model's tokenizer alone, without its weights (``judge run --check`` counts the
#: tokens prompts share with it): ``reader(model) -> tokenize(text) -> token ids``.
VocabularyReader = Callable[[str | None], Callable[[str], list[int]]]
VOCABULARIES: Registry[VocabularyReader] = Registry("vocabulary reader", "judge.vocabularies")
VOCABULARIES.register_lazy("llamacpp", "judge.backends.llamacpp:vocab_tokenizer")


def backend_cost(name: str) -> str:
    """How ``judge run --check`` knows the cost of backend ``name``'s work (``Backend.cost``), read from its
    class without building it: a factory that is a subclass of ``Backend`` declares it; any other factory
    declares nothing (``unknown``)."""
    declared = _backend_class(name)
    return declared.cost if declared is not None else "unknown"


def replay_backend(name: str, model: str | None, config: GenerateConfig, **options: Any) -> Backend:
    """The twin of backend ``name`` that counts what it would evaluate or send (:data:`REPLAYS`), for a
    backend whose cost is ``replay`` or ``hosted``."""
    if name not in REPLAYS or backend_cost(name) not in ("replay", "hosted"):
        raise ValueError(f"backend '{name}' declares no replay")
    return REPLAYS.get(name)(model, config, **options)


def has_batch_api(name: str) -> bool:
    """Whether backend ``name`` can answer a run's requests through a provider's batch API (:data:`BATCHERS`)."""
    return name in BATCHERS


def _backend_class(name: str) -> type[Backend] | None:
    """The class registered under ``name`` when it subclasses ``Backend`` (what declares ``cost``), else None."""
    factory = BACKENDS.get(name)
    return cast("type[Backend]", factory) if isinstance(factory, type) and Backend in factory.__mro__ else None


def register_backend(name: str) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: register ``factory(model: str | None, config: GenerateConfig, **options) -> Backend``."""
    return BACKENDS.register(name)


def sending_options(name: str) -> frozenset[str]:
    """The options of backend ``name`` that change how requests are sent, never an answer (the backend class's
    declared ``sending_options``; none for a backend registered as a plain function)."""
    declared = _backend_class(name)
    return frozenset(declared.sending_options) if declared is not None else frozenset()


def backend_names() -> list[str]:
    return BACKENDS.names()


def create_backend(
    name: str = "llamacpp", model: str | None = None, config: GenerateConfig | None = None, **options: Any
) -> Backend:
    """Build a backend by registered name; ``model`` is a path, hub id or API model name. A backend with a cost
    layer (:data:`METERS`) comes inside it."""
    backend = BACKENDS.get(name)(model, config or GenerateConfig(), **options)
    if name not in METERS:
        return backend
    try:
        return METERS.get(name)(backend)
    except BaseException:
        backend.close()
        raise
