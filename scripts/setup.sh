#!/usr/bin/env bash
# Create .venv and install judge with its development tools.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'
# The real Claude Code CLI for tests/realclient (from npm, into a cache folder; those
# tests skip with the reason when it cannot be installed).
.venv/bin/python tests/realclient/claude_cli.py || true
