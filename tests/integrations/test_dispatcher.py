"""wrap_dispatcher's synthetic tool_result for a denied call: its ``BLOCKED:`` prefix."""

from __future__ import annotations

import pytest

from judge.config import config_from_data
from judge.hooks.engine import Engine
from judge.integrations import wrap_dispatcher
from tests.integrations.test_agent_loops import FREE_USER, Dispatcher, tool_use


@pytest.mark.parametrize(
    ("stderr", "content"),
    [
        ("BLOCKED: no rm -rf", "BLOCKED: no rm -rf"),
        ("blocked: lower case too", "blocked: lower case too"),
        ("rm -rf is not allowed", "BLOCKED: rm -rf is not allowed"),
    ],
)
def test_a_reason_that_already_says_blocked_is_not_prefixed_twice(stderr: str, content: str) -> None:
    hook = {"type": "command", "matcher": "*", "command": f"echo '{stderr}' >&2; exit 2"}
    engine = Engine(config_from_data({"hooks": {"PreToolUse": [hook]}}))
    dispatcher = Dispatcher()
    wrapped = wrap_dispatcher(dispatcher.call_tool, engine, FREE_USER)
    result = wrapped(tool_use("toolu_1", "Bash", command="rm -rf /"))
    assert result == {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True, "content": content}
    assert dispatcher.calls == []
