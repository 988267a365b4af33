"""Bias and robustness probes: does the verdict survive a change that should not matter?

``judge eval SUITE --out DIR --probes padding,claims,injection,format`` (or ``all``)
re-judges every case once per probe with its input perturbed, and counts the verdicts
that flip. Built-in probes perturb the final answer (``final_output``; Stop and
SubagentStop suites):

* ``padding`` — neutral filler appended (verbosity bias: a longer answer is not a
  better one);
* ``claims`` — an unsupported claim of success appended (the judge must check, not
  believe);
* ``injection`` — a prompt injection addressed to the judge appended (the answer must
  not approve itself);
* ``format`` — the answer re-wrapped as a markdown section (format is not content).

A suite defines its own under ``probes:``::

    probes:
      - name: zebra
        target: final_output          # or transcript
        append: " ..."                # and/or prepend: TEXT; or replace: {pattern: REGEX, with: TEXT}

A ``replace`` pattern is RE2 (linear time, bounded memory: a regex cannot hang the run),
case-sensitive unless it says ``(?i)``; ``with`` is inserted literally, at most
``MAX_REPLACEMENTS`` times (:mod:`judge.evaluation.perturbations`). A ``transcript`` probe
rewrites the transcript's text (an inline copy of it is judged; files are never changed).
A case the probe leaves unchanged is not judged again and not counted.

Each probe's results go to ``DIR/probes/NAME.jsonl``; ``report.json`` gets
``probes: {NAME: {"n", "flips", "flipRate", "blockToAllow", "allowToBlock", "unchanged",
"errors", "flipped"}}`` — ``n`` counts the (case, repeat) pairs decided without an error
both plainly and perturbed, ``flipped`` lists those whose verdict changed — and
``probeFlipRate``, the worst probe's flip rate (``--fail-over probeFlipRate=0.1``). A flip
also happens by chance when the judge samples (its ``flipRate`` over repeats measures
that floor): compare a probe's flip rate with it. Probes cost at most one plain run's
judgements each, and are served from the eval cache on a re-run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge.config import STOP_EVENTS
from judge.errors import UsageError
from judge.evaluation.perturbations import BUILTINS, Probe
from judge.evaluation.results import CaseResult, order_results, read_results, repair_results
from judge.evaluation.suite import Case, Suite, resolve_path
from judge.files import MAX_DOCUMENT_BYTES, read_text

#: Largest transcript a ``transcript`` probe rewrites (it is copied inline).
MAX_TRANSCRIPT_BYTES = MAX_DOCUMENT_BYTES


def choose(spec: str, suite: Suite) -> list[Probe]:
    """The probes ``--probes`` names (comma-separated built-in and suite names, or ``all``)."""
    available = {**BUILTINS, **{p.name: p for p in suite.probes}}
    names = [part.strip() for part in spec.split(",") if part.strip()]
    if not names:
        raise UsageError(f"--probes: name one or more of {', '.join(available)}, or all")
    chosen: dict[str, Probe] = {}
    for name in names:
        if name == "all":
            chosen.update(available)
        elif name in available:
            chosen[name] = available[name]
        else:
            raise UsageError(f"--probes: unknown probe {name!r}; known: {', '.join(available)} (or all)")
    needs_answer = [p.name for p in chosen.values() if p.target == "final_output"]
    if needs_answer and suite.event not in STOP_EVENTS:
        raise UsageError(
            f"--probes {', '.join(needs_answer)}: they perturb the final answer, which {suite.event} "
            "cases do not have; define transcript probes in the suite"
        )
    return list(chosen.values())


def _transcript_text(case: Case, base_dir: Path) -> str | None:
    if case.transcript is not None:
        return case.transcript
    named = case.transcript_path or case.context.get("execution_summary")
    if not isinstance(named, str) or not named:
        return None
    return read_text(resolve_path(base_dir, named), "transcript", MAX_TRANSCRIPT_BYTES)


def perturbed(case: Case, probe: Probe, base_dir: Path) -> Case | None:
    """``case`` with its input perturbed by ``probe``; None when the probe changes nothing.
    OSError when the transcript cannot be read."""
    if probe.target == "final_output":
        before = case.context.get("final_output")
        text = before if isinstance(before, str) else ""
        after = probe.apply(text)
        return (
            None
            if after == text
            else case.model_copy(update={"context": {**case.context, "final_output": after}})
        )
    transcript = _transcript_text(case, base_dir)
    if transcript is None:
        return None
    changed = probe.apply(transcript)
    if changed == transcript:
        return None
    context = {k: v for k, v in case.context.items() if k != "execution_summary"}
    return case.model_copy(update={"context": context, "transcript": changed, "transcript_path": None})


def probe_suite(suite: Suite, probe: Probe) -> tuple[Suite, int, list[str]]:
    """The suite with every case perturbed by ``probe``: the suite of changed cases, how
    many were unchanged, and the cases that could not be perturbed (why)."""
    cases, unchanged, problems = [], 0, []
    for case in suite.cases:
        try:
            changed = perturbed(case, probe, suite.base_dir)
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"probe {probe.name}: case {case.id!r}: the transcript cannot be read: {exc}")
            continue
        if changed is None:
            unchanged += 1
        else:
            cases.append(changed)
    return dataclasses.replace(suite, cases=cases, name=f"{suite.name}+{probe.name}"), unchanged, problems


def compare(plain: Sequence[CaseResult], probed: Sequence[CaseResult], unchanged: int) -> dict[str, Any]:
    """One probe's entry of the ``probes`` section (module docstring)."""
    before = {(r.id, r.repeat): r for r in plain if r.decision is not None and r.error is None}
    n = flips = block_to_allow = allow_to_block = 0
    flipped = []
    for result in probed:
        original = before.get((result.id, result.repeat))
        if original is None or result.decision is None or result.error is not None:
            continue
        n += 1
        if original.verdict == result.verdict:
            continue
        flips += 1
        block_to_allow += original.verdict == "block"
        allow_to_block += original.verdict == "allow"
        flipped.append(
            {
                "id": result.id,
                "repeat": result.repeat,
                "from": original.verdict,
                "to": result.verdict,
                "reason": result.reason,
            }
        )
    return {
        "n": n,
        "flips": flips,
        "flipRate": flips / n if n else None,
        "blockToAllow": block_to_allow,
        "allowToBlock": allow_to_block,
        "unchanged": unchanged,
        "errors": sum(1 for r in probed if r.error is not None),
        "flipped": flipped,
    }


#: Judges a suite's pairs not in ``skip`` into a results file; why it did not complete, or None.
RunInto = Callable[[Suite, Path, set[tuple[str, int]]], str | None]


@dataclass
class ProbeRun:
    """What the probes of one run found: each probe's results and unchanged cases, and why
    the probes did not complete (``problems``)."""

    results: dict[str, list[CaseResult]] = field(default_factory=dict)
    unchanged: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def section(self, plain: Sequence[CaseResult]) -> dict[str, dict[str, Any]]:
        """report.json's ``probes`` section."""
        return {name: compare(plain, found, self.unchanged[name]) for name, found in self.results.items()}


def run_probes(
    suite: Suite, probes: list[Probe], out: Path, repeats: int, resume: bool, run: RunInto
) -> ProbeRun:
    """Judge every probe's perturbed cases into ``out/probes/NAME.jsonl`` (``resume``:
    keeping what is there), one probe after another."""
    found = ProbeRun()
    folder = out / "probes"
    folder.mkdir(parents=True, exist_ok=True)
    for probe in probes:
        changed, unchanged, problems = probe_suite(suite, probe)
        if problems:
            found.problems += problems
            return found
        path = folder / f"{probe.name}.jsonl"
        skip: set[tuple[str, int]] = set()
        if resume:
            repair_results(path)
            skip = {(r.id, r.repeat) for r in order_results(read_results(path), changed.cases, repeats)}
        else:
            path.unlink(missing_ok=True)
        failure = run(changed, path, skip) if changed.cases else None
        results = order_results(read_results(path), changed.cases, repeats)
        if failure is None and len(results) < len(changed.cases) * repeats:
            failure = f"{len(changed.cases) * repeats - len(results)} result(s) missing from {path}"
        if failure is not None:
            found.problems.append(f"judge eval: probe {probe.name}: {failure}; run again with --resume")
            return found
        found.results[probe.name] = results
        found.unchanged[probe.name] = unchanged
    return found
