"""Hostile inputs against the security promises (README "Security model")."""

from __future__ import annotations

import time

import pytest

from judge.llm import tools as tools_module
from judge.llm.tools import MAX_QUERY_CHARS, TranscriptTools


@pytest.fixture
def tools(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("".join(f"line {i} {'a' * 50}\n" for i in range(200)))
    return TranscriptTools(path, grep_seconds=1.0)


@pytest.mark.timeout(20)
@pytest.mark.parametrize("is_regexp", [False, True])
def test_grep_refuses_a_huge_query_promptly(tools, is_regexp):
    # The regex engine's set-up for a long case-insensitive literal is cubic and ignores
    # its time limit: a 4,000-character query used to take minutes per search.
    began = time.monotonic()
    out = tools.call("GrepSearch", {"query": "x" * 4000, "isRegexp": is_regexp})
    assert time.monotonic() - began < 3
    assert out.startswith("Error:") and str(MAX_QUERY_CHARS) in out


def test_grep_query_at_the_limit_still_works(tools):
    out = tools.call("GrepSearch", {"query": "line 1" + " " * (MAX_QUERY_CHARS - 6), "isRegexp": False})
    assert out.startswith("No lines match")
    assert tools.call("GrepSearch", {"query": "line 19 ", "isRegexp": False}).startswith("1 matching")


def test_grep_deeply_nested_regex_is_answered(tools, monkeypatch):
    # Past the length cap the old backtracking compiler recursed out of the tool call
    # (an exception the judge loop turned into a failed, fail-open hook).
    monkeypatch.setattr(tools_module, "MAX_QUERY_CHARS", 10_000)
    out = tools.call("GrepSearch", {"query": "(?:" * 400 + "a" + ")" * 400, "isRegexp": True})
    assert out.startswith("20 matching lines")  # RE2 parses deep nesting without recursing
    out = tools.call("GrepSearch", {"query": "(" * 3000 + "a" + ")" * 3000, "isRegexp": True})
    assert out.startswith("20 matching lines")


# ---------------------------------------------------------------------------
# The service: hostile bodies and paths are 4xx, never a 500 or a hang


def _service(tmp_path, transcripts_dir=None):
    from judge.config import config_from_data
    from judge.service.app import ServerSettings, create_app

    config = config_from_data({"hooks": {"Stop": [{"type": "command", "command": "cat >/dev/null"}]}})
    settings = ServerSettings(config=config, data_dir=tmp_path / "data", transcripts_dir=transcripts_dir)
    return create_app(settings)


async def _call(app, method, path, body, content_type="application/json"):
    """One request straight through the ASGI app: (status, JSON body)."""
    import json

    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict] = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(b"content-type", content_type.encode())],
        "query_string": b"",
        "client": ("127.0.0.1", 1),
    }
    await app(scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(data)


@pytest.mark.parametrize("path", ["a" * 5000, "a/" * 3000 + "x", ".." * 200])
async def test_execution_summary_with_a_too_long_name_is_a_400(tmp_path, path):
    import json

    transcripts = tmp_path / "t"
    transcripts.mkdir()
    app = _service(tmp_path, transcripts)
    body = {"hook_event_name": "Stop", "final_output": "x", "execution_summary": path}
    status, data = await _call(app, "POST", "/api/v2/hooks/Stop", json.dumps(body).encode())
    assert status == 400 and data["error"].startswith("execution_summary:")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"name: a\nproperties: 2001-13-45\n", "month must be in 1..12"),
        (b"name: a\nproperties: !!float 'abc'\n", "could not convert"),
        (b"name: a\nproperties: " + b"1" * 5000 + b"\n", "integer longer than"),
    ],
)
async def test_yaml_scalars_that_cannot_be_built_are_a_400(tmp_path, body, problem):
    app = _service(tmp_path)
    status, data = await _call(app, "PUT", "/api/v2/extendedAgent/agents/a", body, "application/yaml")
    assert status == 400 and problem in data["error"]


@pytest.mark.timeout(20)
async def test_yaml_base60_integer_is_refused_quickly(tmp_path):
    # A base-60 integer costs quadratic time to build: 200,000 parts took about a minute.
    app = _service(tmp_path)
    body = b"name: a\nproperties: 1" + b":1" * 100_000 + b"\n"
    began = time.monotonic()
    status, data = await _call(app, "PUT", "/api/v2/extendedAgent/agents/a", body, "application/yaml")
    assert time.monotonic() - began < 3
    assert status == 400 and "integer longer than" in data["error"]


async def test_yaml_bodies_have_their_own_size_limit(tmp_path):
    from judge.service.app import MAX_YAML_BODY

    # Pure-Python YAML parses about 60k short items per second: a 10 MiB body of them held
    # a worker for minutes. JSON bodies keep the service's larger limit.
    app = _service(tmp_path)
    body = b"name: a\nproperties:\n  x:\n" + b"  - 1\n" * (MAX_YAML_BODY // 6 + 10)
    status, data = await _call(app, "PUT", "/api/v2/extendedAgent/agents/a", body, "application/yaml")
    assert status == 413 and str(MAX_YAML_BODY) in data["error"]


# ---------------------------------------------------------------------------
# Config files and the state file


@pytest.mark.parametrize(
    "text",
    [
        "hooks:\n  Stop:\n    - type: command\n      command: x\n      timeout: 2001-13-45\n",
        '{"hooks": {}, "x": ' + "1" * 5000 + "}",
    ],
)
def test_config_scalars_that_cannot_be_built_are_a_config_error(tmp_path, text):
    from judge.config import load_config
    from judge.errors import ConfigError

    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert "malformed" in str(caught.value)


def test_state_file_and_its_folder_are_private(tmp_path):
    import os
    import stat

    from judge.state import Store

    old = os.umask(0o022)
    try:
        store = Store(tmp_path / "new" / "state.sqlite")
        store.close()
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new" / "state.sqlite").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700
