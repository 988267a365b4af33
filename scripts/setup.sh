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
# Codex CLI, Gemini CLI and Copilot CLI for the same tier (pinned, from npm, skipped with
# the reason when they cannot be installed).
.venv/bin/python tests/realclient/host_clis.py || true
# Debian's Chromium for the live view's browser test (tests/service/test_ui.py); without it
# that test is skipped with the reason.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 \
    || echo "setup: could not install chromium; the browser test will be skipped" >&2
fi
# Debian's PostgreSQL server for the tests of `judge serve --state postgresql://...`
# (tests/test_state_postgres*.py start a throw-away cluster; without it they are skipped
# with the reason).
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1 \
  && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; } >/dev/null 2>&1 \
    || echo "setup: could not install postgresql; the PostgreSQL state tests will be skipped" >&2
fi
