"""Edited prompts keep $ARGUMENTS and the answer schema; broken ones are rejected."""

from __future__ import annotations

from judge.tuning.contract import SCHEMA_REPAIR, check_candidate, has_schema

ORIGINAL = 'Check the answer.\n$ARGUMENTS\nRespond with {"ok": true} or {"ok": false, "reason": "..."}\n'


def test_a_good_edit_passes_unchanged() -> None:
    edit = 'Check it cites a source.\n$ARGUMENTS\nAnswer {"ok": true} / {"ok": false, "reason": "why"}'
    checked = check_candidate(edit, ORIGINAL)
    assert checked.prompt == edit + "\n" and checked.repairs == [] and checked.rejected is None


def test_dropped_arguments_are_restored() -> None:
    checked = check_candidate('Check it. {"ok": true} or {"ok": false, "reason": "x"}', ORIGINAL)
    assert checked.prompt is not None
    assert checked.prompt.count("$ARGUMENTS") == 1
    assert checked.repairs == ["restored $ARGUMENTS"]


def test_dropped_schema_is_restored() -> None:
    checked = check_candidate("Check it.\n$ARGUMENTS\nAnswer yes or no.", ORIGINAL)
    assert checked.prompt is not None and has_schema(checked.prompt)
    assert SCHEMA_REPAIR in checked.prompt
    assert checked.repairs == ["restored the answer schema"]


def test_repeated_arguments_are_rejected() -> None:
    checked = check_candidate('$ARGUMENTS\n$ARGUMENTS {"ok": true} {"ok": false, "reason": ""}', ORIGINAL)
    assert checked.prompt is None and "repeats $ARGUMENTS" in (checked.rejected or "")


def test_broken_template_and_new_variables_are_rejected() -> None:
    broken = check_candidate('{% if x %}\n$ARGUMENTS {"ok": true} {"ok": false, "reason": ""}', ORIGINAL)
    assert broken.prompt is None and "Jinja2" in (broken.rejected or "")
    unknown = check_candidate('{{ secret }}\n$ARGUMENTS {"ok": true} {"ok": false, "reason": ""}', ORIGINAL)
    assert unknown.prompt is None and "secret" in (unknown.rejected or "")


def test_empty_and_runaway_candidates_are_rejected() -> None:
    assert check_candidate("  \n", ORIGINAL).rejected == "empty prompt"
    huge = check_candidate("x" * 20000 + "\n$ARGUMENTS", ORIGINAL)
    assert huge.prompt is None and "too long" in (huge.rejected or "")


def test_prompt_without_placeholder_needs_none() -> None:
    original = "Check the answer is polite."
    checked = check_candidate("Check the answer is polite and short.", original)
    assert checked.prompt == "Check the answer is polite and short.\n" and checked.repairs == []
