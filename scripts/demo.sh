#!/usr/bin/env bash
# Set up from nothing, start the gate service on its embedded defaults (SQLite state and
# JSONL audit logs in a data dir), run a demo client against it, then stop the service.
# No API key needed: prompt hooks are served by the packaged FAKE provider.
# Non-interactive; exits non-zero if any step fails. JUDGE_DEMO_KEEP=1 keeps the data dir.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> setting up (.venv with judge and its dependencies; nothing else is installed)"
bash scripts/setup.sh

WORK="$(mktemp -d "${TMPDIR:-/tmp}/judge-demo.XXXXXX")"
DATA="$WORK/data"
LOG="$WORK/serve.log"
PID=""

stop_service() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
  fi
  PID=""
}
cleanup() {
  stop_service
  if [ "${JUDGE_DEMO_KEEP:-0}" = "1" ]; then
    echo "(kept $WORK)"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo
echo "==> starting the service: judge serve --config examples/demo/agent.yaml --data-dir $DATA"
echo "    --transcripts-dir examples/demo/transcripts --port 0 (a free port)"
echo "    prompt-hook tier ReasoningFast -> fake:heuristic, the packaged FAKE provider (no LLM, no key)"
JUDGE_MODEL_REASONINGFAST=fake:heuristic .venv/bin/judge serve \
  --config examples/demo/agent.yaml \
  --data-dir "$DATA" \
  --transcripts-dir examples/demo/transcripts \
  --host 127.0.0.1 --port 0 2>"$LOG" &
PID=$!

PORT=""
for _ in $(seq 1 300); do
  PORT="$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$LOG" | head -n 1)"
  [ -n "$PORT" ] && break
  if ! kill -0 "$PID" 2>/dev/null; then
    echo "the service did not start:" >&2
    cat "$LOG" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$PORT" ]; then
  echo "the service did not start within 30 s:" >&2
  cat "$LOG" >&2
  exit 1
fi
URL="http://127.0.0.1:$PORT"
sed -n '1,2p' "$LOG" | sed 's/^/    /'

echo
echo "==> demo client: .venv/bin/python examples/demo/client.py $URL"
.venv/bin/python examples/demo/client.py "$URL"

echo
echo "==> what the service recorded in $DATA"
for f in session_summaries.jsonl audit_log.jsonl; do
  if [ -f "$DATA/$f" ]; then
    echo "    $f: $(wc -l <"$DATA/$f" | tr -d ' ') line(s), last:"
    tail -n 1 "$DATA/$f" | cut -c1-200 | sed 's/^/      /'
  fi
done
echo "    state.sqlite3: rejection counts per session and registered custom agents"
echo "    request log (stderr, one JSON line per request), last:"
grep '^{' "$LOG" | tail -n 1 | sed 's/^/      /'

echo
echo "==> stopping the service (SIGTERM: in-flight requests finish first)"
stop_service
tail -n 1 "$LOG" | sed 's/^/    /'

cat <<'TXT'

==> using a real model instead of the FAKE provider
    The prompt hooks above name the tier ReasoningFast; the demo mapped it to fake:heuristic.
    Drop that override and give the SDKs their usual variables:

      export ANTHROPIC_API_KEY=...                  # or: export OPENAI_API_KEY=...
      # optional: choose the model of a tier, e.g.
      export JUDGE_MODEL_REASONINGFAST=anthropic:claude-sonnet-4-5   # or openai:gpt-5.4-mini
      # any OpenAI-compatible server (vLLM, Ollama, a gateway):
      #   export OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_API_KEY=unused
      #   export JUDGE_MODEL_REASONINGFAST=openai:llama3.1
      export JUDGE_API_TOKEN=change-me                # require Authorization: Bearer change-me
      .venv/bin/judge serve --config examples/demo/agent.yaml --data-dir data \
        --transcripts-dir examples/demo/transcripts --port 8080

    Endpoints, auth and limits: docs/service.md
TXT

ROOT="$(pwd)"
cat <<TXT

==> the judge command on your PATH
    This demo ran $ROOT/.venv/bin/judge. To type \`judge\` from anywhere:

      source "$ROOT/.venv/bin/activate"                     # in this shell
      mkdir -p ~/.local/bin && ln -sf "$ROOT/.venv/bin/judge" ~/.local/bin/judge    # for good
TXT
case ":$PATH:" in
  *":$HOME/.local/bin:"*) ;;
  *) cat <<'TXT'
      echo 'export PATH="$HOME/.local/bin:$PATH"' >> ~/.bashrc   # ~/.local/bin is not on your PATH yet
TXT
    ;;
esac
cat <<'TXT'

    Then start your own project: judge init my-agent
TXT
