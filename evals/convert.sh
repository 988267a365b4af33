#!/bin/bash
# Regenerate the dataset suites from the public datasets (they are not stored in the repo:
# the data is third-party and licensed). Run from the repository root:
#   bash evals/convert.sh [DATASETS_DIR]     (default: ../shared/datasets)
set -euo pipefail
DATA="${1:-../shared/datasets}"
JUDGE="${JUDGE:-judge}"
"$JUDGE" datasets convert llmbar "$DATA/llmbar/natural.json" --out evals/llmbar
"$JUDGE" datasets convert tau-bench "$DATA/tau-bench/gpt-4o-airline.json" --out evals/tau-bench
