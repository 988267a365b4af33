"""The files one eval run writes into its folder: ``report.json``, ``junit.xml`` and
``report.html`` (:func:`write_reports`, from the run's results) and ``run.json``
(:func:`write_run_info`: how the run went, kept out of report.json so a resumed run's
report is identical to an uninterrupted one's)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from judge.evaluation.metrics import compute_metrics, rounded
from judge.evaluation.reports.html import write_html
from judge.evaluation.reports.junit import write_junit
from judge.evaluation.results import CaseResult
from judge.evaluation.suite import Suite


def write_reports(
    suite: Suite, results: list[CaseResult], out: Path, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Compute the metrics from ``results`` (in suite order), with the ``extra`` sections
    (:mod:`judge.evaluation.trust`), and write the three report files; returns the exact
    (unrounded) metrics."""
    metrics = {**compute_metrics(results, name=suite.name, event=suite.event), **(extra or {})}
    report = rounded(metrics)
    atomic_write(out / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    write_junit(results, out / "junit.xml", suite.name)
    write_html(report, results, suite.cases, suite.base_dir, out / "report.html")
    return metrics


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8", errors="backslashreplace")  # a lone surrogate: its JSON escape
    os.replace(tmp, path)


def all_errored(report: dict[str, Any]) -> str | None:
    """The message for a run in which every judgement errored (None otherwise)."""
    n = int(report["n"])
    if not n or report["errors"] != n:
        return None
    groups = report.get("errorGroups") or []
    top = f"; most common: {groups[0]['message']}" if groups else ""
    return f"judge eval: every judgement errored ({n} of {n}): the run measured nothing{top}"


def write_run_info(
    out: Path,
    started_at: str,
    judging_seconds: float,
    judgements: int,
    concurrency: int,
    resumed: bool,
    workers: int = 1,
    spend: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``DIR/run.json``: how this run went (timing is not part of report.json, which
    must be identical for a resumed and an uninterrupted run)."""
    run = {
        "startedAt": started_at,
        "judgements": judgements,
        "judgingSeconds": round(judging_seconds, 3),
        "judgementsPerSecond": round(judgements / judging_seconds, 2) if judging_seconds > 0 else 0.0,
        "concurrency": concurrency,
        "workers": workers,
        "resumed": bool(resumed),
    }
    if spend is not None:  # --max-usd: what this command spent
        run["spend"] = spend
    (out / "run.json").write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
    return run
