"""Calibration records: how each prompt hook of a suite agreed with its labels.

``judge eval SUITE --out DIR`` writes ``DIR/calibration.json``
(:class:`~judge.hooks.calibration.CalibrationFile`): one record per prompt hook the
suite's event runs (agent level, then each custom agent's), each with where the hook is
written, the SHA-256 of its prompt text and its model as resolved (what a hook's
``calibration:`` block is matched by: :mod:`judge.hooks.calibration`), and its figures
against the labels:

* each (case, repeat) the hook gave a verdict on, without an error, for a labelled case
  is one scored judgement (``n``; ``cases`` counts the distinct cases, what ``minCases``
  asks for); the hook's **own** verdict is scored, not the event's decision, so with
  several prompt hooks each is measured on its own (write one suite per hook when they
  check different things: a label says what the gate should answer);
* ``kappa`` (Cohen's) with its 95 % interval (:func:`judge.evaluation.stats.kappa_interval`);
  ``blockPrecision`` = tp / (tp + fp), ``blockRecall`` = tp / (tp + fn) and
  ``allowRecall`` = tn / (tn + fp), each with its Wilson 95 % interval;
* the suite's name and hash (the suite file and its cases), judge's version and the time.

A hook whose model does not resolve gets no record (nothing could match it).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from judge import __version__
from judge.evaluation.results import CaseResult
from judge.evaluation.stats import cohen_kappa, kappa_interval, rogan_gladen, wilson_interval
from judge.hooks.calibration import FILE_NAME, CalibrationFile, CalibrationRecord, Confusion, prompt_sha256
from judge.logs.jsonl import now_iso

if TYPE_CHECKING:
    from judge.config import Config, Hook
    from judge.evaluation.suite import Suite


def suite_sha256(suite: Suite) -> str:
    """SHA-256 of the suite file's bytes and its cases as loaded (ids, contexts, transcripts,
    labels): what a record was measured on."""
    digest = hashlib.sha256()
    try:
        digest.update(suite.path.read_bytes())
    except OSError:
        digest.update(str(suite.path).encode("utf-8", "surrogatepass"))
    for case in suite.cases:
        line = json.dumps(case.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
        digest.update(line.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


def prompt_hooks(config: Config, event: str) -> list[tuple[str, str, int, str | None, Hook]]:
    """(place, level, index, custom agent, hook) of every prompt hook of ``event``."""
    from judge.config.models import hook_place

    found: list[tuple[str, str, int, str | None, Hook]] = [
        (hook_place(event, i, None), "agent", i, None, h)
        for i, h in enumerate(config.hooks.for_event(event))
        if h.type == "prompt"
    ]
    for name, agent in config.custom_agents.items():
        found += [
            (hook_place(event, i, name), "custom", i, name, h)
            for i, h in enumerate(agent.hooks.for_event(event))
            if h.type == "prompt"
        ]
    return found


def _ci(successes: int, n: int) -> list[float] | None:
    return list(wilson_interval(successes, n)) if n else None


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def record_for(results: list[CaseResult], place: str) -> tuple[Confusion, int, int, int]:
    """The confusion of the hook at ``place`` over labelled ``results``, its scored
    judgements, distinct cases and errors."""
    counts: dict[str, int] = defaultdict(int)
    cases: set[str] = set()
    errors = 0
    for result in results:
        if result.label is None:
            continue
        mine = next((p for p in result.prompts or () if p.place == place), None)
        if mine is None:
            continue
        if mine.decision is None:
            errors += 1
            continue
        key = ("t" if mine.decision == result.label else "f") + ("p" if mine.decision == "block" else "n")
        counts[key] += 1
        cases.add(result.id)
    confusion = Confusion(tp=counts["tp"], fp=counts["fp"], tn=counts["tn"], fn=counts["fn"])
    return confusion, sum(counts.values()), len(cases), errors


def calibration_records(
    suite: Suite, results: list[CaseResult], config: Config | None = None
) -> CalibrationFile:
    """The records of a run of ``suite`` (module docstring); ``config`` is the one judged
    (default: the suite's)."""
    from judge.llm.tiers import hook_model_label

    config = config if config is not None else suite.config
    suite_hash, created = suite_sha256(suite), now_iso()
    records = []
    for place, level, index, agent, hook in prompt_hooks(config, suite.event):
        try:
            label = hook_model_label(hook.model, config.models)
        except ValueError:
            continue
        c, n, cases, errors = record_for(results, place)
        kappa_ci = kappa_interval(c.tp, c.fp, c.tn, c.fn)
        records.append(
            CalibrationRecord(
                event=suite.event,
                index=index,
                level="agent" if level == "agent" else "custom",
                agent=agent,
                prompt_sha256=prompt_sha256(hook.prompt or ""),
                model=label,
                n=n,
                cases=cases,
                errors=errors,
                samples=hook.samples,
                confusion=c,
                kappa=cohen_kappa(c.tp, c.fp, c.tn, c.fn),
                kappa_ci95=list(kappa_ci) if kappa_ci is not None else None,
                block_precision=_ratio(c.tp, c.tp + c.fp),
                block_precision_ci95=_ci(c.tp, c.tp + c.fp),
                block_recall=_ratio(c.tp, c.tp + c.fn),
                block_recall_ci95=_ci(c.tp, c.tp + c.fn),
                allow_recall=_ratio(c.tn, c.tn + c.fp),
                allow_recall_ci95=_ci(c.tn, c.tn + c.fp),
                suite=suite.name,
                suite_sha256=suite_hash,
                judge_version=__version__,
                created_at=created,
            )
        )
    return CalibrationFile(records=records)


def write_calibration(out: Path, found: CalibrationFile) -> Path | None:
    """Write ``out/calibration.json`` (atomically); None when there is nothing to record."""
    if not found.records:
        return None
    path = out / FILE_NAME
    tmp = path.with_name(path.name + ".tmp")
    text = json.dumps(found.model_dump(mode="json", by_alias=True), indent=2, ensure_ascii=False)
    tmp.write_text(text + "\n", encoding="utf-8", errors="backslashreplace")
    tmp.replace(path)
    return path


def summary(found: CalibrationFile) -> list[dict[str, object]]:
    """What ``report.json`` says of the records (``calibration``): one entry per hook."""
    return [
        {
            "place": r.place,
            "model": r.model,
            "cases": r.cases,
            "kappa": r.kappa,
            "blockPrecision": r.block_precision,
            "blockRecall": r.block_recall,
            "allowRecall": r.allow_recall,
        }
        for r in found.records
    ]


def matching_record(found: CalibrationFile, config: Config, event: str) -> CalibrationRecord:
    """The one record of ``found`` measured for a prompt hook of ``config``'s ``event`` (its
    prompt and model); ValueError saying why there is none, or more than one."""
    from judge.llm.tiers import hook_model_label

    wanted = set()
    for _, _, _, _, hook in prompt_hooks(config, event):
        try:
            wanted.add((prompt_sha256(hook.prompt or ""), hook_model_label(hook.model, config.models)))
        except ValueError:
            continue
    records = {(r.prompt_sha256, r.model): r for r in found.records if (r.prompt_sha256, r.model) in wanted}
    if not records:
        raise ValueError(
            f"no record matches a {event} prompt hook of the suite's configuration (its prompt and "
            "model as resolved now): was it written by judge eval of these hooks?"
        )
    if len(records) > 1:
        raise ValueError(
            f"{len(records)} records match the suite's {event} prompt hooks; the correction needs "
            "the one judge whose verdicts were recorded (a configuration with one prompt hook)"
        )
    return next(iter(records.values()))


def corrected_block_rate(results: list[CaseResult], record: CalibrationRecord) -> dict[str, object]:
    """``report.json``'s ``correctedBlockRate`` for recorded verdicts: the raw block rate and
    the rate corrected for the judge's error measured in ``record`` (Rogan–Gladen, with its
    interval: :func:`judge.evaluation.stats.rogan_gladen`). ValueError when the record
    lacks labelled block or allow cases."""
    decided = [r for r in results if r.decision is not None]
    if not decided:
        raise ValueError("no recorded verdict to correct")
    c = record.confusion
    if not c.tp + c.fn or not c.tn + c.fp:
        raise ValueError(
            "the record has no labelled block or no labelled allow cases: the judge's error is "
            "not measured on both sides"
        )
    blocked = sum(1 for r in decided if r.verdict == "block")
    rate = rogan_gladen(blocked, len(decided), (c.tp, c.tp + c.fn), (c.tn, c.tn + c.fp))
    return {
        "n": len(decided),
        "blocked": blocked,
        "raw": rate.raw,
        "rawCi95": list(rate.raw_interval),
        "corrected": rate.corrected,
        "ci95": list(rate.interval) if rate.interval is not None else None,
        "sensitivity": rate.sensitivity,
        "specificity": rate.specificity,
        "method": "Rogan-Gladen; delta-method interval on Agresti-Coull-adjusted proportions",
        "record": {
            "place": record.place,
            "model": record.model,
            "cases": record.cases,
            "createdAt": record.created_at,
        },
    }
