"""The published scorecard: every number in bench/README.md and docs/evals.md is rendered from
the summary file `bench/scorecard.py` writes (committed), and the command runs end to end
(offline here, on a fake judge: the real model is never a CI dependency)."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO.parent / "shared" / "datasets"


@pytest.fixture(autouse=True)
def bench_on_path(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(REPO / "bench"))
    yield


def module(name: str) -> ModuleType:
    sys.modules.pop(name, None)
    return importlib.import_module(name)


def test_the_scorecard_in_the_documents_is_the_committed_summary_rendered() -> None:
    tables = module("scorecard_tables")
    card = json.loads((REPO / tables.SUMMARY).read_text(encoding="utf-8"))
    for document in tables.DOCUMENTS:
        text = (REPO / document).read_text(encoding="utf-8")
        assert tables.replaced(text, card, document) == text, (
            f"{document}: run bench/scorecard.py --tables-only"
        )


def test_every_row_of_the_card_has_its_figures() -> None:
    tables = module("scorecard_tables")
    card = json.loads((REPO / tables.SUMMARY).read_text(encoding="utf-8"))
    assert set(card["suites"]) == {"llmbar", "tau-bench"}
    for suite in card["suites"].values():
        for k in ("k1", "k3"):
            assert {"kappa", "kappaCi95", "blockPrecision", "blockRecall", "cases", "errors"} <= set(suite[k])
        assert set(suite["probes"]) == {"padding", "claims", "injection", "format"}
        assert "flipRate" in suite["k3"] and "seconds" in suite["k1"]


@pytest.mark.slow
@pytest.mark.skipif(not (DATASETS / "llmbar" / "natural.json").is_file(), reason="needs ../shared/datasets")
def test_the_one_command_runs_end_to_end_on_a_fake_judge(tmp_path: Path) -> None:
    scorecard = module("scorecard")
    documents = []
    for name in ("README.md", "evals.md"):
        copy = tmp_path / name
        tables = module("scorecard_tables")
        copy.write_text(f"before\n{tables.BEGIN}\nold\n{tables.END}\nafter\n", encoding="utf-8")
        documents.append(copy)
    summary = tmp_path / "card.json"
    argv = [
        "--pairs", "2", "--tau", "1", "--out", str(tmp_path / "out"), "--datasets", str(DATASETS),
        "--no-start", "--model", "fake:heuristic", "--summary", str(summary), "--no-tables",
    ]  # fmt: skip
    assert scorecard.main(argv) == 0
    card = json.loads(summary.read_text(encoding="utf-8"))
    assert card["model"] == "fake:heuristic" and card["suites"]["llmbar"]["cases"] == 4
    assert card["suites"]["tau-bench"]["k3"]["judgements"] == 1
    assert card["suites"]["llmbar"]["probes"]["padding"]["n"] == 4
    module("scorecard_tables").write_tables(card, documents)
    text = documents[0].read_text(encoding="utf-8")
    assert text.startswith("before\n") and text.endswith("after\n") and "old" not in text
    assert "| LLMBar natural | 3 |" in text and "fake:heuristic" in text
