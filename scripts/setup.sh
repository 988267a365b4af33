#!/usr/bin/env bash
# Create .venv and install judge into it (the distribution judge-hooks, the command judge).
#   bash scripts/setup.sh          judge only: what the demo and your own use need
#   bash scripts/setup.sh --dev    judge with the development tools (ruff, mypy, pytest, ...)
#                                  and the system tools some tests use (scripts/test-tools.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=0
case "${1:-}" in
  --dev) DEV=1 ;;
  "") ;;
  *) echo "usage: bash scripts/setup.sh [--dev]" >&2; exit 2 ;;
esac
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
# This project's distribution was called "judge" once, like an unrelated project on PyPI:
# neither may shadow the judge package installed here.
if .venv/bin/python -m pip show -q judge >/dev/null 2>&1; then
  .venv/bin/python -m pip uninstall -q -y judge
fi
if [ "$DEV" = 1 ]; then
  .venv/bin/python -m pip install -q -e '.[dev]'
  bash scripts/test-tools.sh
else
  .venv/bin/python -m pip install -q -e .
fi
