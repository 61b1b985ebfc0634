"""Loading Hugging Face models for the model-based classic scorers (lazily: torch/transformers only on use).

A model is named by a hub id ("gpt2"), a local directory, a ``.gguf`` file, or a packaged model name
("smollm2-135m-instruct", alias "smollm2"). Loaded models are cached per process, because loading
from a GGUF dequantises the whole model (seconds) and several scorers may share one model.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from ...backends.hf import save_safetensors
from ...core.errors import BackendError, MissingExtraError
from ...models.packaged import PACKAGED, resolve_model_path

_CACHE: dict[tuple[str, str], tuple[Any, Any]] = {}
_ALIASES = {"smollm2": "smollm2-135m-instruct"}


def require(module: str, what: str) -> Any:
    """Import ``module`` or raise MissingExtraError naming the ``classic`` extra."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingExtraError(what, "classic", module.split(".")[0]) from e


def torch_modules(what: str) -> tuple[Any, Any]:
    """(torch, transformers), or MissingExtraError naming ``pip install 'dialogue-judge[classic]'``."""
    return require("torch", what), require("transformers", what)


def _locate(model: str) -> tuple[str, dict[str, Any]]:
    """Where ``from_pretrained`` should look, and the extra keyword arguments (gguf_file) it needs."""
    name = _ALIASES.get(model, model)
    if name in PACKAGED:
        path = resolve_model_path(name)
        return str(converted(path, PACKAGED[name].sha256)), {}
    p = Path(model).expanduser()
    if p.is_file() and p.suffix == ".gguf":
        return str(p.parent), {"gguf_file": p.name}
    if p.is_dir() and not (p / "config.json").exists():
        ggufs = sorted(p.glob("*.gguf"))
        if len(ggufs) == 1:
            return str(p), {"gguf_file": ggufs[0].name}
    return model, {}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "judge" / "hf"


def converted(gguf: Path, sha256: str) -> Path:
    """A safetensors copy of a packaged GGUF model, made once per machine.

    Loading a GGUF in transformers dequantises every tensor (a minute on a busy 2-core machine);
    the safetensors copy loads in about a second. The copy is keyed by the file's checksum.
    """
    target = cache_dir() / f"{gguf.stem}-{sha256[:12]}"
    if (target / "config.json").exists():
        return target
    _, transformers = torch_modules("converting a packaged model")
    tok = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    net = transformers.AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    return save_safetensors(net, tok, target)


def load(model: str, kind: str, what: str) -> tuple[Any, Any]:
    """(tokenizer, model) for ``kind`` in causal-lm / nsp / seq-cls, in eval mode, cached per process."""
    key = (model, kind)
    if key in _CACHE:
        return _CACHE[key]
    _torch, transformers = torch_modules(what)
    where, extra = _locate(model)
    auto = {"causal-lm": transformers.AutoModelForCausalLM,
            "nsp": getattr(transformers, "AutoModelForNextSentencePrediction", None),
            "seq-cls": transformers.AutoModelForSequenceClassification}[kind]
    try:
        tok = transformers.AutoTokenizer.from_pretrained(where, **extra)
        mdl = auto.from_pretrained(where, **extra)
    except (OSError, ValueError) as e:
        raise BackendError(f"{what}: cannot load model '{model}' ({kind}): {e}") from e
    mdl.eval()
    _CACHE[key] = (tok, mdl)
    return tok, mdl


def put(model: str, kind: str, tokenizer: Any, net: Any) -> None:
    """Register an already built (tokenizer, model) under a name, e.g. a tiny model built in memory."""
    net.eval()
    _CACHE[(model, kind)] = (tokenizer, net)


def set_threads(threads: int | None) -> None:
    """CPU threads for torch; on a shared machine, fewer threads than cores avoids spin-wait slowdowns."""
    if threads:
        import torch

        torch.set_num_threads(int(threads))


def max_positions(net: Any, default: int = 1024) -> int:
    cfg = net.config
    for attr in ("n_positions", "max_position_embeddings"):
        v = getattr(cfg, attr, None)
        if isinstance(v, int) and v > 0:
            return v
    return default


def separator_token(tokenizer: Any) -> str:
    """The end-of-text token dialog models put between turns (DialoGPT: ``<|endoftext|>``)."""
    return tokenizer.eos_token or tokenizer.sep_token or "\n"
