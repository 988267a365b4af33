"""The hook engine: which hooks run for an event, in what order, what their answers mean,
and the gate around it.

* :mod:`judge.hooks.engine` — :class:`~judge.hooks.engine.Engine`, the rules of every
  event (data in, decision out);
* :mod:`judge.hooks.gate` — :class:`~judge.hooks.gate.Gate`: the engine plus the per-session
  Stop count, budgets and audit logs;
* :mod:`judge.hooks.answers` — a hook's own answer, read strictly;
* :mod:`judge.hooks.judging` — the seam to a prompt judge (:class:`~judge.hooks.judging.PromptJudge`);
* :mod:`judge.hooks.command` — command hooks, run through :mod:`judge.hooks.sandbox` and its
  stdlib-only per-hook :mod:`judge.hooks.supervisor`.
"""
