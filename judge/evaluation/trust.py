"""What an eval run says about how far its judge can be trusted, beside its plain metrics.

* ``calibration.json`` (:mod:`judge.evaluation.calibration`) and report.json's
  ``calibration`` summary: each prompt hook's own agreement with the labels;
* ``probes`` and ``probeFlipRate`` (:mod:`judge.evaluation.probes`): how often a change
  that should not matter flips a verdict;
* ``correctedBlockRate`` (``--recorded --calibration FILE``): the block rate of recorded
  production verdicts corrected for the judge's measured error.

:func:`prepare` checks the flags before anything is judged; :func:`sections` computes
the sections once the run's results are in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.errors import UsageError
from judge.evaluation.calibration import (
    calibration_records,
    corrected_block_rate,
    matching_record,
    summary,
    write_calibration,
)
from judge.evaluation.consistency import worst_flip_rate
from judge.evaluation.perturbations import Probe
from judge.evaluation.probes import ProbeRun, choose
from judge.evaluation.results import CaseResult
from judge.evaluation.suite import Suite
from judge.hooks.calibration import CalibrationRecord, parse_calibration, read_source


@dataclass
class TrustPlan:
    """What the run measures beyond its metrics: the probes to run, and the calibration
    record that corrects recorded verdicts."""

    probes: list[Probe] = field(default_factory=list)
    record: CalibrationRecord | None = None
    record_file: Path | None = None


def prepare(
    suite: Suite, probes: str | None, calibration: Path | None, *, recorded: bool, batch: bool
) -> TrustPlan:
    """The plan for ``--probes`` and ``--calibration``; UsageError for what cannot run."""
    plan = TrustPlan()
    if probes is not None:
        if recorded or batch:
            raise UsageError(
                f"--probes re-judges every case; it cannot be combined with "
                f"{'--recorded' if recorded else '--batch'}"
            )
        plan.probes = choose(probes, suite)
    if calibration is not None:
        if not recorded:
            raise UsageError("--calibration corrects recorded verdicts: use it with --recorded")
        source = read_source(calibration)
        if source.text is None:
            raise UsageError(f"--calibration: {source.problem}")
        try:
            found = parse_calibration(source.text, str(calibration))
            plan.record = matching_record(found, suite.config, suite.event)
        except ValueError as exc:
            raise UsageError(f"--calibration {calibration}: {exc}") from None
        plan.record_file = calibration
    return plan


def sections(
    suite: Suite,
    results: list[CaseResult],
    out: Path,
    plan: TrustPlan,
    probed: ProbeRun | None,
    recorded: bool,
) -> dict[str, Any]:
    """The report sections (module docstring); writes ``out/calibration.json`` when the run
    judged prompt hooks."""
    extra: dict[str, Any] = {}
    if not recorded:
        found = calibration_records(suite, results)
        if write_calibration(out, found) is not None:
            extra["calibration"] = summary(found)
    if probed is not None:
        extra["probes"] = probed.section(results)
        extra["probeFlipRate"] = worst_flip_rate(extra["probes"])
    if plan.record is not None:
        try:
            corrected = corrected_block_rate(results, plan.record)
        except ValueError as exc:
            corrected = {"error": str(exc)}
        extra["correctedBlockRate"] = {**corrected, "file": str(plan.record_file)}
    return extra
