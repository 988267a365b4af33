"""The Claude Code hook adapter (``judge claude-code``): Claude Code's hook input in, its hook
output out, with the same configuration, rules and per-session Stop counts as every other
way in.

* :mod:`~judge.integrations.claude_code.protocol` — Claude Code's protocol facts (events,
  fields, caps, versions); a leaf every other module may import;
* :mod:`~judge.integrations.claude_code.fast_path` — the standard-library answer for a
  call no hook matches (no configuration or engine loaded);
* :mod:`~judge.integrations.claude_code.context` — hook input → judge's hook context;
* :mod:`~judge.integrations.claude_code.adapter` — one event evaluated through the gate;
* :mod:`~judge.integrations.claude_code.output` — the decision → Claude Code's answer;
* :mod:`~judge.integrations.claude_code.config`, :mod:`~judge.integrations.claude_code.pin` —
  the configuration a session started with, pinned against edits by the agent;
* :mod:`~judge.integrations.claude_code.failure` — what Claude Code gets when judge itself fails;
* :mod:`~judge.integrations.claude_code.install` — ``judge claude-code install``.

Nothing here is imported until ``judge claude-code`` runs.
"""
