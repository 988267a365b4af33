"""A verdict cut off by the answer-length cap still decides (in the schema turn only)."""

from __future__ import annotations

import pytest

from judge.llm.verdicts import MARK, MAX_REASON, cut_off_verdict


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{"ok": false, "reason": "Tests fail. Tests fail. Tes',
            (False, "Tests fail. Tests fail. Tes" + MARK),
        ),
        ('```json\n{\n  "ok": true,\n  "reason": "fine but', (True, "fine but" + MARK)),
        ('{"ok": true', (True, None)),
        ('{"ok": false, "reason": "', (False, None)),
        ('{"ok": false, "reason": "say \\"no\\" and \\', (False, 'say "no" and' + MARK)),
        ('{"ok": false, "reason": "bad \\u12', (False, "bad \\u12" + MARK)),
        # The reason is whole; the cap cut a citation's quote: the reason stops at its quote.
        (
            '{"ok": false, "reason": "Say \\"2 failed\\".", "citations": [{"line": 3, "quote": "2 fa',
            (False, 'Say "2 failed".'),
        ),
        ('{"ok": true, "reason": "", "citations": [{"line": 1, "quote": "x', (True, None)),
    ],
)
def test_a_cut_off_verdict_keeps_its_decision(text, expected):
    assert cut_off_verdict(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I think the answer is fine",
        '{"reason": "x", "ok": false',  # the decision is not the first field
        'Here: {"ok": false, "reason": "x',  # prose before the object
        '{"ok": maybe',
        "",
    ],
)
def test_anything_else_is_not_a_verdict(text):
    assert cut_off_verdict(text) is None


def test_a_runaway_reason_is_capped():
    ok, reason = cut_off_verdict('{"ok": false, "reason": "' + "again " * 5000) or (None, None)
    assert ok is False and reason is not None and len(reason) <= MAX_REASON + len(MARK)
