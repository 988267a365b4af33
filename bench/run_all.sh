#!/usr/bin/env bash
# Every cost benchmark in one pass on the current checkout (sections 1-7 and 9-11 of
# bench/README.md), one after another, each script's table saved with the date, the
# revision and the load average before it ran:
#
#   bash bench/run_all.sh [OUT]        # OUT defaults to bench-pass/ (about 6 minutes on 2 CPUs;
#                                      # bench_transcript_tools --big needs ~1 GB of temporary disk)
#
# The real-model sections (8 and 12, bench_real_model.py and scorecard.py) are not in the
# pass: they take hours on a CPU and need ../shared/tools/real-model.sh (see their sections).
# A script that cannot run (no PostgreSQL, no package index for Inspect AI) is reported and
# the pass goes on; the exit code is the number of scripts that failed.
set -uo pipefail

# (all in one function, read whole before it runs: editing this file mid-pass is harmless)
main() {
  cd "$(dirname "$0")/.."
  out=${1:-bench-pass}
  mkdir -p "$out"
  py=.venv/bin/python
  revision=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  failed=0
  run() {  # run LOG SCRIPT [ARGS...]: bench/SCRIPT.py ARGS, its table in OUT/LOG.txt
    local label=$1 name=$2
    shift 2
    local log="$out/$label.txt"
    {
      echo "# $name $*"
      echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ), revision $revision, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    } >"$log"
    echo "== $name $* (log: $log)"
    local start=$SECONDS
    "$py" "bench/$name.py" "$@" >>"$log" 2>&1
    local rc=$?
    if [ "$rc" != 0 ]; then
      echo "   FAILED with exit code $rc (see $log)"
      failed=$((failed + 1))
    fi
    echo "# took $((SECONDS - start)) s" >>"$log"
    echo "   $((SECONDS - start)) s"
  }
  run bench_engine_overhead bench_engine_overhead
  run bench_eval_concurrency bench_eval_concurrency
  run bench_inspect bench_inspect
  run bench_transcript_tools bench_transcript_tools --big
  run bench_service bench_service
  run bench_service_command_hook bench_service --command-hook
  run bench_claude_code bench_claude_code
  run bench_command_hooks bench_command_hooks
  run bench_cascade bench_cascade
  run bench_evidence bench_evidence
  run bench_service_replicas bench_service_replicas
  echo "pass done: $failed script(s) failed; tables in $out/"
  return "$failed"
}

main "$@"; exit $?
