#!/usr/bin/env bash
# Regenerate docs/openapi.json from the service's routes and models (a test fails when it is stale).
set -euo pipefail
cd "$(dirname "$0")/.."
"${PYTHON:-.venv/bin/python}" -c 'import sys; from judge.service.openapi import render; sys.stdout.write(render())' > docs/openapi.json
