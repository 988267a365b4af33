#!/usr/bin/env bash
# The whole test suite: lint, type check, tests. Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
# A fresh clone (or a .venv missing a development tool): set up first.
if [ -z "${PYTHON:-}" ] && ! { [ -x "$PY" ] && "$PY" -c "import hypothesis, jsonschema, mypy, pytest, ruff, schemathesis" 2>/dev/null; }; then
  echo "==> setting up .venv first (bash scripts/setup.sh)" >&2
  bash scripts/setup.sh
fi
"$PY" -m ruff check judge tests bench examples
"$PY" -m ruff format --check judge tests bench examples
"$PY" -m mypy judge
"$PY" -m pytest -q "$@"
