"""The files ``judge tune`` writes into ``--out``:

* ``candidates.jsonl`` — every prompt tried: kind, round, parent(s), status, repairs,
  scores and metrics per split (test only for the baseline and the winner), whether it
  is on the Pareto frontier and the dev units it is best on, the train items shown to
  the optimizer and the few-shot demos it carries, the critique;
* ``best.yaml`` — the suite's config with the winning prompt in place;
* ``report.html`` — baseline against winner on test (:mod:`judge.tuning.report`);
* ``splits.json`` and ``summary.json`` — the split, and the outcome for scripts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from judge.config import parse_document
from judge.evaluation.suite import Suite, resolve_path
from judge.files import read_text

if TYPE_CHECKING:
    from judge.tuning.tuner import TuneOutcome


def suite_config_path(suite: Suite) -> Path:
    """The hook config file the suite names."""
    data = yaml.safe_load(read_text(suite.path, "suite file"))
    return resolve_path(suite.base_dir, str(data["config"]))


def config_with_prompt(path: Path, event: str, index: int, prompt: str) -> dict[str, Any]:
    """The config document at ``path`` (either form) with ``hooks.EVENT[INDEX].prompt`` replaced."""
    data = parse_document(read_text(path, "config file"), str(path))
    hooks = data["spec"]["hooks"] if isinstance(data.get("spec"), dict) else data["hooks"]
    hooks[event][index]["prompt"] = prompt
    assert isinstance(data, dict)
    return data


class _BlockDumper(yaml.SafeDumper):
    pass


def _str_presenter(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_presenter)


def dump_yaml(data: Any) -> str:
    """YAML with multi-line strings (prompts) as literal blocks."""
    return yaml.dump(data, Dumper=_BlockDumper, sort_keys=False, allow_unicode=True, width=110)


def write_outputs(outcome: TuneOutcome, suite: Suite, out: Path) -> None:
    from judge.tuning.report import render_tune_report

    out.mkdir(parents=True, exist_ok=True)
    winner_id = outcome.winner.id
    with (out / "candidates.jsonl").open("w", encoding="utf-8") as fh:
        for cand in outcome.candidates:
            line = cand.model_dump(by_alias=True)
            line["winner"] = cand.id == winner_id
            for metrics in line["metrics"].values():
                metrics.pop("disagreements", None)
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    best = config_with_prompt(suite_config_path(suite), outcome.event, outcome.index, outcome.winner.prompt)
    (out / "best.yaml").write_text(dump_yaml(best), encoding="utf-8")
    (out / "splits.json").write_text(outcome.split.model_dump_json(indent=2) + "\n", encoding="utf-8")
    (out / "report.html").write_text(render_tune_report(outcome), encoding="utf-8")
    (out / "summary.json").write_text(json.dumps(summary(outcome), indent=2) + "\n", encoding="utf-8")
    outcome.files = {name: str(out / name) for name in ("candidates.jsonl", "best.yaml", "report.html")}


def summary(outcome: TuneOutcome) -> dict[str, Any]:
    """The outcome as JSON (``summary.json``)."""
    from judge.tuning.report import headline

    comparison = outcome.comparison
    return {
        "suite": outcome.suite,
        "hook": f"{outcome.event}:{outcome.index}",
        "objective": outcome.objective,
        "baseline": outcome.baseline.id,
        "winner": outcome.winner.id,
        "frontier": [c.id for c in outcome.candidates if c.frontier],
        "stopped": outcome.stopped,
        "limit": outcome.limit,
        "calls": outcome.calls,
        "maxCalls": outcome.max_calls,
        "spentUsd": outcome.spent_usd,
        "maxUsd": outcome.max_usd,
        "optimizerModel": outcome.optimizer_model,
        "split": {name: len(outcome.split.ids(name)) for name in ("train", "dev", "test")},
        "scores": {
            "baseline": outcome.baseline.scores,
            "winner": outcome.winner.scores,
        },
        "test": None
        if comparison is None
        else {
            "unit": outcome.unit,
            "n": comparison.n,
            "accuracyBaseline": comparison.accuracy_a,
            "accuracyWinner": comparison.accuracy_b,
            "improved": [p.id for p in comparison.improved],
            "regressed": [p.id for p in comparison.regressed],
            "mcnemarP": comparison.p_value,
        },
        "headline": headline(outcome),
    }
