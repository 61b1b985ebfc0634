"""Shared fixtures: the benchmark data folder beside the repository and the real embedded model."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA_DIR.is_dir():
        pytest.fail(f"benchmark data not found at {DATA_DIR} (expected ../shared/data beside the repository)")
    return DATA_DIR


@pytest.fixture(scope="session")
def smollm2():
    """The real embedded default model (SmolLM2-135M-Instruct via llama.cpp), loaded once per session."""
    from judge.backends import create_backend
    from judge.config import GenerateConfig

    backend = create_backend("llamacpp", None, GenerateConfig(threads=2))
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def hf_smollm2(tmp_path_factory):
    """The same SmolLM2 GGUF loaded by the transformers backend (dequantised to fp32; slow, once per
    session) and saved as safetensors under a temporary cache (``.gguf_copy``) for fast reloads and vLLM."""
    pytest.importorskip("torch", reason="the transformers backend needs the [hf] extra (torch)")
    pytest.importorskip("transformers", reason="the transformers backend needs the [hf] extra")
    from judge.backends import create_backend
    from judge.config import GenerateConfig

    cache = tmp_path_factory.mktemp("gguf-cache")
    backend = create_backend("transformers", None, GenerateConfig(threads=2, batch_size=8), gguf_cache=str(cache))
    yield backend
    backend.close()
