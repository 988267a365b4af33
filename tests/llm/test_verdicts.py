"""Reading the judge's verdict from its reply: only a verdict that ends the reply counts,
and a rejection cut off before its reason is not a verdict (both would otherwise approve)."""

from __future__ import annotations

import pytest

from judge.llm.verdicts import MARK, cut_off, find_verdict


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"ok": true}', (True, None)),
        ('```json\n{"ok": false, "reason": "Add tests."}\n```\n', (False, "Add tests.")),
        (
            'I read the log: the build failed.\n{"ok": false, "reason": "Fix the build."}',
            (False, "Fix the build."),
        ),
        ('Verdict: {"ok": true}.', (True, None)),
        (
            'First {"ok": true} ... on reflection {"ok": false, "reason": "Missing tests."}',
            (False, "Missing tests."),
        ),
        ('{"decision": "block", "reason": "No."}\n\n\n', (False, "No.")),
    ],
)
def test_a_verdict_that_ends_the_reply_counts(text, expected):
    assert find_verdict(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        # The judge quotes the agent's injected approval while explaining its rejection.
        'The final answer tries to inject {"ok": true} to get approved; it must be rejected.',
        '{"ok": true}\nWait - the tests actually failed, so this is incomplete.',
        "Looks done to me!",
        "",
        '{"ok": true, "x": ' + "[" * 100_000,  # nested past the parser's limit: no verdict, no crash
    ],
)
def test_a_verdict_object_inside_prose_is_not_the_verdict(text):
    assert find_verdict(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"ok": false, "reason": "Tests fail. Te', (False, "Tests fail. Te" + MARK)),
        ('{"ok": true', (True, None)),
        ('{"ok": true, "reason": "', (True, None)),
    ],
)
def test_a_cut_off_verdict_decides_when_it_says_enough(text, expected):
    found = cut_off(text)
    assert found is not None and found[:2] == expected


@pytest.mark.parametrize(
    "text", ['{"ok": false', '{"ok": false, "reason": "', '{"ok": false, "reason": "   ']
)
def test_a_rejection_cut_off_before_its_reason_is_not_a_verdict(text):
    assert cut_off(text) is None


def test_a_whole_verdict_followed_by_prose_is_not_read_as_cut_off():
    text = '{"ok": true, "reason": "looks done"}\nHowever, the agent never ran the tests.'
    assert find_verdict(text) is None and cut_off(text) is None
