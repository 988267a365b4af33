"""How consistent a prompt hook's samples are (``samples: k``), from an eval run's results.

``report.json``'s ``samples`` section, one entry per prompt hook that took samples
(by its place, ``hooks.Stop[0]``):

* ``k`` — the hook's samples per judgement;
* ``judgements`` — judgements with at least two samples that gave a verdict;
* ``flipped`` / ``flipRate`` — of those, the ones whose samples disagree (some allow,
  some block): how often asking the same judge again can change its answer. It grows
  with k (more chances to differ), so compare flip rates at the same k;
* ``meanAgreement`` — the mean per-judgement agreement: the share of its samples (with a
  verdict) that gave the majority verdict (1.0: unanimous);
* ``byCase`` — every judgement whose samples disagreed: ``{"id", "repeat", "agreement",
  "verdicts"}`` (the unanimous ones are left out: their agreement is 1.0).

``sampleFlipRate`` (top level, for ``--fail-over``) is the highest hook flip rate.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from judge.evaluation.results import CaseResult


def agreement(verdicts: list[str]) -> float | None:
    """The share of ``verdicts`` (``error`` left out) that gave the most common one."""
    counts = Counter(v for v in verdicts if v != "error")
    total = sum(counts.values())
    return max(counts.values()) / total if total else None


def samples_section(results: list[CaseResult]) -> dict[str, dict[str, Any]] | None:
    """The ``samples`` section (module docstring); None when no hook took samples."""
    by_place: dict[str, list[tuple[CaseResult, list[str]]]] = defaultdict(list)
    for result in results:
        for prompt in result.prompts or ():
            if prompt.samples and len(prompt.samples) > 1:
                by_place[prompt.place].append((result, prompt.samples))
    if not by_place:
        return None
    section: dict[str, dict[str, Any]] = {}
    for place, judged in by_place.items():
        decided = [(r, v) for r, v in judged if sum(1 for x in v if x != "error") >= 2]
        agreements = [agreement(v) or 0.0 for _, v in decided]
        flipped = [(r, v) for r, v in decided if len({x for x in v if x != "error"}) > 1]
        section[place] = {
            "k": max(len(v) for _, v in judged),
            "judgements": len(decided),
            "flipped": len(flipped),
            "flipRate": len(flipped) / len(decided) if decided else None,
            "meanAgreement": sum(agreements) / len(agreements) if agreements else None,
            "byCase": [
                {"id": r.id, "repeat": r.repeat, "agreement": agreement(v), "verdicts": v} for r, v in flipped
            ],
        }
    return section


def worst_flip_rate(section: dict[str, dict[str, Any]] | None) -> float | None:
    """The highest flip rate in a ``samples`` (or ``probes``) section (None: none defined)."""
    rates = [entry["flipRate"] for entry in (section or {}).values() if entry.get("flipRate") is not None]
    return max(rates) if rates else None
