"""Eval suites: judge many recorded responses with the same hooks and report how it went.

* :mod:`~judge.evaluation.suite` — the suite format and its validation (:func:`load_suite`);
* :mod:`~judge.evaluation.run` — one ``judge eval`` run (:func:`~judge.evaluation.run.run_eval`),
  and :mod:`~judge.evaluation.compare` several variants of it side by side
  (:mod:`~judge.evaluation.variants`);
* :mod:`~judge.evaluation.runner` — :func:`run_cases` (bounded concurrency) and ``results.jsonl``;
  :mod:`~judge.evaluation.workers` the same over worker processes, :mod:`~judge.evaluation.batch`
  over the providers' batch APIs;
* :mod:`~judge.evaluation.cache` — the on-disk judgement cache;
* :mod:`~judge.evaluation.metrics` — :func:`compute_report` (``report.json``), with
  :mod:`~judge.evaluation.stats` (every statistic: Wilson, kappa, McNemar, Holm, flips);
  :mod:`~judge.evaluation.bounds` the ``--fail-under`` / ``--fail-over`` checks;
* :mod:`~judge.evaluation.reports` — ``report.html``, ``junit.xml``, ``comparison.html``;
* :mod:`~judge.evaluation.datasets` — suites from public datasets and shadow logs.
"""

from __future__ import annotations

from judge.errors import SuiteError
from judge.evaluation.metrics import compute_report
from judge.evaluation.runner import CaseResult, run_cases
from judge.evaluation.stats import wilson_interval
from judge.evaluation.suite import Case, Suite, load_suite

__all__ = [
    "Case",
    "CaseResult",
    "Suite",
    "SuiteError",
    "compute_report",
    "load_suite",
    "run_cases",
    "wilson_interval",
]
