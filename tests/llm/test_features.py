"""Which request feature a server's error answer rejects (local servers' real messages)."""

from __future__ import annotations

import pytest

from judge.llm.providers.features import Features, rejected_feature

FIELDS = {
    "structured_output": "response_format",
    "tool_choice": "tool_choice",
    "tools": "tools",
    "stop": "stop",
}
FULL = {"tools": [], "tool_choice": "auto", "response_format": {}}


@pytest.mark.parametrize(
    ("status", "message", "body", "expected"),
    [
        (500, "tools param requires --jinja flag", {"tools": [], "tool_choice": "auto"}, "tools"),
        (500, "Unsupported param: tools", {"tools": [], "tool_choice": "auto"}, "tools"),
        (400, "registry.ollama.ai/library/gemma:2b does not support tools", {"tools": []}, "tools"),
        (
            400,
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
            {"tools": [], "tool_choice": "auto"},
            "tool_choice",
        ),
        (
            400,
            '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
            {"tools": []},
            "tools",
        ),
        (400, "tool_choice 'required' is not supported", FULL, "tool_choice"),
        (400, "failed to parse grammar", {"response_format": {}}, "structured_output"),
        (500, "JSON schema conversion failed", {"response_format": {}}, "structured_output"),
        (400, "structured output is not supported", {"response_format": {}}, "structured_output"),
        (400, "something else entirely", {"response_format": {}}, "structured_output"),
        (400, "Unsupported param: stop", {"stop": [], "response_format": {}}, "stop"),
        (
            400,
            "Unsupported parameter: 'stop' is not supported with this model.",
            {"stop": [], "tools": [], "tool_choice": "auto"},
            "stop",
        ),
    ],
)
def test_the_rejected_feature_is_named(status, message, body, expected):
    assert rejected_feature(status, message, body, FIELDS) == expected


@pytest.mark.parametrize(
    ("status", "message", "body"),
    [
        (500, "internal server error", FULL),  # a real failure: retried, not degraded
        (503, "tools param requires --jinja flag", FULL),  # overload statuses are transient
        (429, "rate limit", FULL),
        (400, "context length exceeded", {"tools": [], "tool_choice": "auto"}),  # nothing to drop
        (500, "tools param requires --jinja flag", {"response_format": {}}),  # no tools sent
        (400, "Unsupported param: stop", {"tools": []}),  # no stop sequences sent
    ],
)
def test_other_errors_blame_no_feature(status, message, body):
    assert rejected_feature(status, message, body, FIELDS) is None


def test_a_dropped_feature_stays_off():
    features = Features()
    features.drop("tool_choice")
    assert (features.structured_output, features.tool_choice, features.tools) == (True, False, True)
