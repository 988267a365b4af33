#!/usr/bin/env bash
# The whole test suite: lint, type check, tests. Run from the repository root.
# A fresh clone (or a .venv made for the demo, without the development tools) is set up
# first with `bash scripts/setup.sh --dev`, which also installs the system tools some
# tests use (scripts/test-tools.sh says which, and why).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
if [ -z "${PYTHON:-}" ] && ! { [ -x "$PY" ] && "$PY" -c "import hypothesis, jsonschema, mypy, pytest, ruff, schemathesis" 2>/dev/null; }; then
  echo "==> setting up .venv with the development tools first (bash scripts/setup.sh --dev)" >&2
  bash scripts/setup.sh --dev
fi
"$PY" -m ruff check judge tests bench examples
"$PY" -m ruff format --check judge tests bench examples
"$PY" -m mypy judge
"$PY" -m pytest -q "$@"
