#!/usr/bin/env bash
# The tools some tests use besides Python packages, installed when they are missing; each
# says what it installs and why, and why not when it cannot (those tests are then skipped,
# each with the reason). The demo and judge itself need none of them.
#   - Chromium (Debian's chromium): the live view's browser test, tests/service/test_ui.py
#   - PostgreSQL (Debian's postgresql): the tests of judge serve --state postgresql://...,
#     which start a throw-away cluster of their own
#   - the Claude Code CLI, and Codex, Gemini and Copilot CLIs (npm, pinned, into
#     ~/.cache/judge-tests): tests/realclient/
# System packages need root and apt-get; without them this says so and installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
LOG="$(mktemp "${TMPDIR:-/tmp}/judge-test-tools.XXXXXX")"
trap 'rm -f "$LOG"' EXIT
UPDATED=0

apt_install() {  # apt_install PACKAGE WHAT WHY
  local package="$1" what="$2" why="$3"
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "test tools: $what is not installed and there is no apt-get here: $why will be skipped" >&2
    return 0
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "test tools: $what is not installed; installing it needs root (sudo apt-get install $package): $why will be skipped" >&2
    return 0
  fi
  echo "test tools: installing $what (apt-get install $package) for $why" >&2
  if [ "$UPDATED" = 0 ]; then
    if ! apt-get update -qq >"$LOG" 2>&1; then
      echo "test tools: apt-get update failed, so $why will be skipped:" >&2
      tail -n 5 "$LOG" | sed 's/^/    /' >&2
      return 0
    fi
    UPDATED=1
  fi
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >"$LOG" 2>&1; then
    echo "test tools: could not install $package, so $why will be skipped:" >&2
    tail -n 5 "$LOG" | sed 's/^/    /' >&2
  fi
}

if ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium "Chromium" "the live view's browser test (tests/service/test_ui.py)"
fi
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  apt_install postgresql "the PostgreSQL server" "the tests of judge serve --state postgresql://... (tests/state/)"
fi
# The pinned Claude Code CLI from npm, into a cache folder (it says what it does, or why not).
"$PY" tests/realclient/claude_cli.py || true
# Codex CLI, Gemini CLI and Copilot CLI for the same tier (pinned, from npm, or why not).
"$PY" tests/realclient/host_clis.py || true
