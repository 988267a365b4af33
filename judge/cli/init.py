"""``judge init [DIR]``: a commented starter config and a labelled smoke suite.

Writes ``judge.yaml`` and ``judge-smoke/{suite.yaml,cases.jsonl}`` into DIR (default:
the current folder) and prints the commands to run next, Claude Code's included (its
installer reads ``.claude/judge.yaml`` unless given ``--config``). Existing files are
never overwritten unless ``--force``; then nothing is written at all.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

CONFIG = """\
# judge hook configuration. Check it with:  judge validate judge.yaml --strict
# Every option: `judge config schema` (JSON Schema) and the README.
#
# Prompt hooks are judged by an LLM. `model` is a tier (Reasoning, ReasoningFast, General,
# Fast, LongContext) or a model (openai:<name>, anthropic:<name>, fake:<mode> offline).
# A tier is served by the provider whose key is set (ANTHROPIC_API_KEY, else OPENAI_API_KEY);
# choose its model here, or with JUDGE_MODEL_<TIER> (e.g. JUDGE_MODEL_REASONINGFAST):
#
# models:
#   ReasoningFast: openai:gpt-5.4-mini

hooks:
  # Stop: before the agent's final answer goes out. A block sends the reason back to the
  # agent as its next instruction.
  Stop:
    - type: prompt
      model: ReasoningFast
      timeout: 60          # seconds for the whole judgement (1-300)
      maxRejections: 3     # after 3 rejections in a row the answer goes through
      repeats: 0           # the same answer rejected for the same reason again ends the loop
                           # at once (outcome "stalled"); a judge that finds the work needs
                           # you (a key, a decision) answers "impossible": it ends too
      failMode: allow      # a judge error (no key, timeout) lets the answer through
      prompt: |
        {% include "completeness.j2" %}
        $ARGUMENTS
      # The packaged prompts: completeness.j2, investigation.j2, evidence.j2,
      # format_marker.j2. Template variables: final_output, agent_name, ... (the event's
      # documented fields) and context.<any field>. $ARGUMENTS is the whole context.
      #
      # Trust the judge before it blocks: 1. label recorded answers (judge-smoke/cases.jsonl,
      # 30 or more); 2. measure it: `judge eval judge-smoke/suite.yaml --out runs/real`
      # writes runs/real/calibration.json (kappa, block precision, ... for this prompt and
      # model); 3. set the floors below and uncomment them; 4. it enforces while its record
      # meets them. Until then, or when the prompt or model changes, it runs as shadow:
      # recorded, never blocking, and its result says why (`calibration.status`).
      # calibration:
      #   file: runs/real/calibration.json
      #   minKappa: 0.6
      #   minBlockPrecision: 0.8
      #   minCases: 30

  # PreToolUse: before a tool runs. A command hook is a script: no LLM, no cost.
  # It reads the context JSON on stdin; printing {"decision": "block", "reason": ...}
  # blocks, printing nothing allows. Errors block here (failMode defaults to block).
  PreToolUse:
    - type: command
      matcher: Bash        # a regex over the tool name (anchored); "*" matches every tool
      timeout: 10
      script: |
        #!/usr/bin/env python3
        import json, sys
        context = json.load(sys.stdin)
        command = str(context.get("tool_input", {}).get("command", ""))
        if "rm -rf /" in command or "git push --force" in command:
            print(json.dumps({"decision": "block", "reason": "Not allowed here: " + command}))
"""

SUITE = """\
# A labelled smoke suite for judge.yaml's Stop hook. Run it offline first:
#   judge eval judge-smoke/suite.yaml --out runs/smoke --model fake:heuristic
# then with the real judge (an API key set), and add your own recorded answers to
# cases.jsonl: one JSON object a line with id, context, label (allow/block).
name: smoke
config: ../judge.yaml
event: Stop
cases: cases.jsonl
repeats: 1
"""

CASES: list[dict[str, object]] = [
    {
        "id": "answered",
        "label": "allow",
        "context": {"final_output": "The capital of Australia is Canberra."},
    },
    {
        "id": "fixed-and-tested",
        "label": "allow",
        "context": {"final_output": "I fixed the off-by-one in parse() and the test suite passes."},
        "transcript": "User: fix the off-by-one in parse() and run the tests.\n"
        "Assistant: (tool) edit parse.py -> ok\nAssistant: (tool) pytest -> 42 passed\n",
    },
    {
        "id": "promise",
        "label": "block",
        "context": {"final_output": "I will look into it and get back to you."},
    },
    {"id": "placeholder", "label": "block", "context": {"final_output": "Summary: TODO"}},
    {"id": "empty", "label": "block", "context": {"final_output": ""}},
]

FILES: dict[str, str] = {
    "judge.yaml": CONFIG,
    "judge-smoke/suite.yaml": SUITE,
    "judge-smoke/cases.jsonl": "".join(json.dumps(case) + "\n" for case in CASES),
}


def _shown(folder: Path, name: str) -> str:
    return name if folder == Path(".") else str(folder / name)


def next_steps(folder: Path) -> str:
    config = _shown(folder, "judge.yaml")
    suite = _shown(folder, "judge-smoke/suite.yaml")
    runs = _shown(folder, "runs")
    return f"""
Next:
  judge validate {config} --strict
      prove the config can run (templates rendered, models resolved)
  judge eval {suite} --out {runs}/smoke --model fake:heuristic
      the smoke suite offline: no API key, a rule-of-thumb fake judge
  export ANTHROPIC_API_KEY=...    (or OPENAI_API_KEY=...)
  judge eval {suite} --out {runs}/real
      the same suite with the real judge; add your own labelled cases: it writes
      {runs}/real/calibration.json, what the Stop hook's `calibration:` block (commented
      in {config}) needs before the hook may block
  echo '{{"tool_name": "Bash", "tool_input": {{"command": "rm -rf /"}}}}' \\
    | judge run --config {config} --event PreToolUse
      one decision as JSON (the command hook blocks; no key needed)
  judge claude-code install --config {config} --dry-run
      with Claude Code, from your project's folder: the hooks it would add to
      .claude/settings.json (drop --dry-run to add them). Without --config it reads
      .claude/judge.yaml: move {config} there to keep it with the project. Claude Code
      needs the API key in its environment for the Stop hook (without one the hook
      errors and lets the answer through, saying so)
"""


def init_main(args: argparse.Namespace) -> int:
    folder = Path(args.dir)
    targets = {name: folder / name for name in FILES}
    existing = [str(path) for path in targets.values() if path.exists()]
    if existing and not args.force:
        print(f"judge init: not overwriting {', '.join(existing)} (use --force)", file=sys.stderr)
        return 1
    try:
        for name, path in targets.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(FILES[name], encoding="utf-8")
    except OSError as exc:
        print(f"judge init: cannot write into {folder}: {exc}", file=sys.stderr)
        return 1
    print("Wrote " + ", ".join(str(p) for p in targets.values()))
    print(next_steps(folder), end="")
    return 0
