"""Eval suites: judge many recorded responses with the same hooks and report how it went.

* :mod:`judge.evaluation.suite` — the suite format and its validation (:func:`load_suite`);
* :mod:`judge.evaluation.runner` — :func:`run_cases` (bounded concurrency) and ``results.jsonl``;
* :mod:`judge.evaluation.cache` — the on-disk judgement cache;
* :mod:`judge.evaluation.batch` — ``--batch``: the providers' batch APIs;
* :mod:`judge.evaluation.metrics` — :func:`compute_report` (``report.json``);
* :mod:`judge.evaluation.junit` / :mod:`judge.evaluation.report_html` — CI and human reports;
* :mod:`judge.evaluation.variants` / :mod:`judge.cli.compare` — several models or
  configs side by side (``comparison.json``: :mod:`judge.evaluation.comparison`, with
  :mod:`judge.evaluation.compare_stats`; ``comparison.html``: :mod:`judge.evaluation.compare_html`);
* :mod:`judge.evaluation.datasets` — converters from public datasets into suites.
"""

from __future__ import annotations

from judge.errors import SuiteError
from judge.evaluation.metrics import compute_report, wilson_interval
from judge.evaluation.runner import CaseResult, run_cases
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
