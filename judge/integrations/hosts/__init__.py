"""The other agent hosts speaking Claude Code's hook protocol: ``judge codex``, ``judge gemini``,
``judge copilot``, ``judge cursor``. One adapter core, one dialect per host.

* :mod:`~judge.integrations.hosts.dialect` - what a dialect is: the host's input as a
  :class:`~judge.integrations.hosts.dialect.HostCall`, judge's answer as a
  :class:`~judge.integrations.hosts.dialect.Verdict` (standard library only);
* :mod:`~judge.integrations.hosts.codex`, :mod:`~judge.integrations.hosts.gemini`,
  :mod:`~judge.integrations.hosts.copilot`, :mod:`~judge.integrations.hosts.cursor` - each
  host's protocol facts (events, input fields, output forms, exit-code rules, caps, where
  its hooks live) in a module of its own;
* :mod:`~judge.integrations.hosts.core` - ``respond(dialect, args, hook_text) -> Answer``,
  the shared adapter (configuration, deadline, failures);
  :mod:`~judge.integrations.hosts.evaluate` - one call through the gate;
* :mod:`~judge.integrations.hosts.fast_path` - the standard-library answer for a call no
  hook matches;
* :mod:`~judge.integrations.hosts.install` (with :mod:`~judge.integrations.hosts.trust`
  for Codex's trust records) - ``judge <host> install``;
* :mod:`~judge.integrations.hosts.foreign` (:mod:`~judge.integrations.hosts.caller`: who
  calls) - ``judge claude-code`` run by Copilot CLI or
  Cursor, which read Claude Code's settings files.

Nothing here is imported until one of those commands runs.
"""
