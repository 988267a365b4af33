#!/usr/bin/env bash
# The whole test suite: lint, type check, tests. Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
"$PY" -m ruff check judge tests bench examples
"$PY" -m ruff format --check judge tests bench examples
"$PY" -m mypy judge
"$PY" -m pytest -q "$@"
