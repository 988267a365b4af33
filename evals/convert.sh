#!/bin/bash
# Regenerate the dataset suites from the public datasets (they are not stored in the repo:
# the data is third-party). Run from the repository root:
#   bash evals/convert.sh [DATASETS_DIR]     (default: ../shared/datasets)
# DATASETS_DIR holds llmbar/natural.json and tau-bench/gpt-4o-airline.json; where to
# download them is in evals/README.md (and printed below when one is missing).
set -euo pipefail
DATA="${1:-../shared/datasets}"
if [ -z "${JUDGE:-}" ]; then
  if [ -x .venv/bin/judge ]; then JUDGE=.venv/bin/judge; else JUDGE=judge; fi
fi
LLMBAR_URL=https://raw.githubusercontent.com/princeton-nlp/LLMBar/main/Dataset/LLMBar/Natural/dataset.json
TAU_URL=https://raw.githubusercontent.com/sierra-research/tau-bench/main/historical_trajectories/gpt-4o-airline.json
missing=0
for pair in "llmbar/natural.json $LLMBAR_URL" "tau-bench/gpt-4o-airline.json $TAU_URL"; do
  file="${pair%% *}"
  url="${pair#* }"
  if [ ! -f "$DATA/$file" ]; then
    echo "convert: $DATA/$file is missing; download it (MIT license) with:" >&2
    echo "  mkdir -p \"$DATA/$(dirname "$file")\" && curl -fsSL -o \"$DATA/$file\" $url" >&2
    missing=1
  fi
done
[ "$missing" = 0 ] || exit 1
"$JUDGE" datasets convert llmbar "$DATA/llmbar/natural.json" --out evals/llmbar
"$JUDGE" datasets convert tau-bench "$DATA/tau-bench/gpt-4o-airline.json" --out evals/tau-bench
