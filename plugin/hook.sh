#!/usr/bin/env bash
# judge's plugin hook: `judge claude-code` for one Claude Code event, run from the Python
# environment the plugin's SessionStart set up (plugin/setup.py).
#
#   bash hook.sh EVENT SECONDS      (hooks/hooks.json; the hook input on stdin)
#
# The configuration: the plugin's `config` option, else $JUDGE_CONFIG, else
# .claude/judge.yaml in the project, else none (nothing is checked). The `api_key` option
# becomes ANTHROPIC_API_KEY or OPENAI_API_KEY (the `provider` option). Events go to the
# resident judge (--resident). Without a set-up environment a PreToolUse call is denied
# and any other event goes on with a notice: a policy that cannot run never passes in silence.
set -u
event="${1:-}"
seconds="${2:-50}"
data="${CLAUDE_PLUGIN_DATA:-}"
python=""
if [ -n "$data" ] && [ -f "$data/python" ]; then
  python="$(cat "$data/python")"
fi
if [ -z "$python" ] || [ ! -x "$python" ]; then
  reason="judge is not set up (its SessionStart hook sets it up in ${data:-the plugin data folder}; see setup.log there)"
  case "$event" in
    PreToolUse|PreSkillShellCommand) echo "judge plugin: $reason; the call is denied" >&2; exit 2 ;;
    SessionStart) echo "judge plugin: $reason" >&2; exit 0 ;;
    *) printf '{"systemMessage": "judge: %s; not checked"}\n' "$reason"; exit 0 ;;
  esac
fi
config="${CLAUDE_PLUGIN_OPTION_CONFIG:-${JUDGE_CONFIG:-}}"
project_config="${CLAUDE_PROJECT_DIR:-.}/.claude/judge.yaml"
if [ -z "$config" ] && [ -f "$project_config" ]; then
  config="$project_config"
fi
if [ -n "$config" ]; then
  export JUDGE_CONFIG="$config"
fi
if [ -n "${CLAUDE_PLUGIN_OPTION_API_KEY:-}" ]; then
  case "${CLAUDE_PLUGIN_OPTION_PROVIDER:-anthropic}" in
    openai) export OPENAI_API_KEY="$CLAUDE_PLUGIN_OPTION_API_KEY" ;;
    *) export ANTHROPIC_API_KEY="$CLAUDE_PLUGIN_OPTION_API_KEY" ;;
  esac
fi
unset CLAUDE_PLUGIN_OPTION_API_KEY
exec "$python" -m judge claude-code --pinned --resident --timeout "$seconds"
