#!/usr/bin/env bash
# Reproduce the paper's table shapes with the embedded model on a subset (LIMIT items per set).
# Usage: benchmarks/run_tables.sh [DATA_DIR] [LIMIT] [extra judge run options, e.g. --backend ... --model ...]
# Each run resumes where it stopped if interrupted; `judge report results/<name>` re-renders.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="${1:-data}"; LIMIT="${2:-50}"; shift $(( $# > 2 ? 2 : $# )) || true
judge data verify --data-dir "$DATA" || judge data download --data-dir "$DATA"
for t in table3_fed_turn table4_fed_dial table5_selection table6_models dstc10_zeroshot; do
  echo "== $t"
  /usr/bin/time -f "$t: %e s wall" judge run "benchmarks/configs/$t.toml" --data-dir "$DATA" --limit "$LIMIT" "$@"
done
