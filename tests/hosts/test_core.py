"""The adapter core every host shares: counts, caps, transcripts, failures - through ``respond``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from judge.integrations.hosts.codex import DIALECT as CODEX
from judge.integrations.hosts.copilot import DIALECT as COPILOT
from judge.integrations.hosts.core import respond
from judge.integrations.hosts.cursor import DIALECT as CURSOR
from judge.integrations.hosts.dialect import Dialect
from judge.integrations.hosts.gemini import DIALECT as GEMINI
from judge.state import Store
from tests.hosts import payloads


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("JUDGE_CONFIG", "JUDGE_STOP_BLOCK_CAP", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def flags(tmp_path: Path, config: dict[str, Any] | None, **more: Any) -> argparse.Namespace:
    path = None
    if config is not None:
        path = tmp_path / "judge.yaml"
        path.write_text(yaml.safe_dump(config))
    values = {"config": str(path) if path else None, "state": str(tmp_path / "state.sqlite")}
    return argparse.Namespace(**values, data_dir=None, timeout=None, rewrite=None, event=None, **more)


def answer(dialect: Dialect, args: argparse.Namespace, data: Any) -> tuple[dict[str, Any] | None, list[str]]:
    text = data if isinstance(data, str) else json.dumps(data)
    got = respond(dialect, args, text, age=0.0)
    assert got.code == 0
    return (json.loads(got.stdout) if got.stdout else None), got.stderr


def recorder(folder: Path) -> dict[str, Any]:
    """A command hook saving the context it gets, then approving."""
    script = (
        "#!/usr/bin/env python3\nimport json, sys\nc = json.load(sys.stdin)\n"
        "c['transcript_text'] = open(c['execution_summary']).read() if c.get('execution_summary') else None\n"
        f"json.dump(c, open({str(folder / 'context.json')!r}, 'w'))\n"
        "print(json.dumps({'decision': 'approve'}))\n"
    )
    return {"type": "command", "script": script}


ALWAYS_REJECT = {
    "type": "prompt",
    "prompt": "Done? $ARGUMENTS",
    "model": "fake:block:Run the tests.",
    "maxRejections": 3,
    "repeats": 3,  # the agent repeats one answer on purpose
}


def test_a_codex_stop_is_sent_back_counted_per_session_and_forced_at_max_rejections(tmp_path: Path) -> None:
    args = flags(tmp_path, {"hooks": {"Stop": [ALWAYS_REJECT]}})
    store = Store(tmp_path / "state.sqlite")
    first, _ = answer(CODEX, args, payloads.codex("Stop", tmp_path))
    assert first == {"decision": "block", "reason": "Run the tests."}
    assert store.rejection_count(payloads.SESSION) == 1
    second, _ = answer(CODEX, args, payloads.codex("Stop", tmp_path, stop_hook_active=True))
    assert second == {"decision": "block", "reason": "Run the tests."}
    forced, _ = answer(CODEX, args, payloads.codex("Stop", tmp_path, stop_hook_active=True))
    assert forced is not None and "decision" not in forced
    assert "Stop forced: allowed after 3 rejection(s)" in forced["systemMessage"]
    # A new prompt's first stop (stop_hook_active false) starts a new loop.
    again, _ = answer(CODEX, args, payloads.codex("Stop", tmp_path))
    assert again == {"decision": "block", "reason": "Run the tests."}


def test_a_host_without_a_cap_lets_the_agent_stop_after_judges_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command Stop hook is not bounded by maxRejections, and Gemini honours any number of
    blocks: judge's own cap ends the loop, and the user is told."""
    monkeypatch.setenv("JUDGE_STOP_BLOCK_CAP", "2")
    block = {"type": "command", "command": 'echo \'{"decision": "block", "reason": "KEEP GOING"}\''}
    args = flags(tmp_path, {"hooks": {"Stop": [block]}})
    first, _ = answer(GEMINI, args, payloads.gemini("AfterAgent", tmp_path))
    second, _ = answer(GEMINI, args, payloads.gemini("AfterAgent", tmp_path, stop_hook_active=True))
    third, errors = answer(GEMINI, args, payloads.gemini("AfterAgent", tmp_path, stop_hook_active=True))
    assert first == second == {"decision": "block", "reason": "KEEP GOING"}
    assert third is not None and "decision" not in third
    assert "let stop after 2 blocks in a row" in third["systemMessage"]
    assert any("Stop blocks in a row" in line for line in errors)
    # Copilot caps blocks itself: judge adds no cap of its own there.
    copilot = [
        answer(COPILOT, args, payloads.copilot("Stop", tmp_path, stop_hook_active=True))[0] for _ in range(3)
    ]
    assert copilot == [{"decision": "block", "reason": "KEEP GOING"}] * 3


def test_a_stop_naming_no_session_on_a_host_without_a_cap_is_not_blocked(tmp_path: Path) -> None:
    args = flags(tmp_path, {"hooks": {"Stop": [ALWAYS_REJECT]}})
    data = {"hook_event_name": "Stop", "last_assistant_message": "done", "stop_hook_active": True}
    out, errors = answer(CODEX, args, data)
    assert out is not None and "decision" not in out and "names no session" in out["systemMessage"]
    assert any("nothing would bound the loop" in line for line in errors)


def test_a_copilot_stop_is_judged_on_the_answer_in_its_events_log(
    tmp_path: Path, hook_writable: Path
) -> None:
    payloads.copilot_events(tmp_path / "events.jsonl", answer="All tests pass.")
    args = flags(tmp_path, {"hooks": {"Stop": [recorder(hook_writable)]}})
    out, _ = answer(COPILOT, args, payloads.copilot("Stop", tmp_path))
    assert out is None
    context = json.loads((hook_writable / "context.json").read_text())
    assert (context["final_output"], context["host"], context["stop_reason"]) == (
        "All tests pass.",
        "copilot",
        "end_turn",
    )
    shown = context["transcript_text"]
    assert "TOOL CALL bash [call_50]" in shown and "TOOL RESULT [call_50]: LINKER-ERROR-7" in shown
    assert "You are the GitHub Copilot CLI" not in shown and "hook.start" not in shown
    assert not Path(context["execution_summary"]).exists()  # the rendered copy is removed


def test_a_gemini_retry_is_judged_on_its_latest_answer_not_all_of_them(
    tmp_path: Path, hook_writable: Path
) -> None:
    chat = payloads.gemini_chat(
        tmp_path / "session-2026-12-04T15-48-ce943689.jsonl", ("Wrote a.txt.", "Checked a.txt.")
    )
    args = flags(tmp_path, {"hooks": {"Stop": [recorder(hook_writable)]}})
    retry = payloads.gemini("AfterAgent", tmp_path, stop_hook_active=True)
    retry["prompt_response"] = "Wrote a.txt.\nChecked a.txt."  # Gemini adds the retries up
    answer(GEMINI, args, retry)
    context = json.loads((hook_writable / "context.json").read_text())
    assert (context["final_output"], context["prompt"]) == ("Checked a.txt.", "create a.txt")
    shown = context["transcript_text"]
    assert "TOOL CALL run_shell_command [t1]" in shown and "USER: Check it again." in shown
    assert shown.count("TOOL RESULT [t1]") == 1 and chat.exists()


def test_a_codex_stop_reads_its_rollout_for_the_judge(tmp_path: Path, hook_writable: Path) -> None:
    payloads.codex_rollout(tmp_path / "rollout.jsonl")
    args = flags(tmp_path, {"hooks": {"Stop": [recorder(hook_writable)]}})
    answer(CODEX, args, payloads.codex("Stop", tmp_path))
    shown = json.loads((hook_writable / "context.json").read_text())["transcript_text"]
    assert 'TOOL CALL exec_command [call_5]: {"cmd": "echo LINKER-ERROR-7 > a.txt"}' in shown
    assert "DEVELOPER: [instructions" in shown and "permissions instructions" not in shown
    assert "ASSISTANT: Wrote a.txt." in shown and "token_count" not in shown


DENY = {"type": "command", "matcher": "*", "command": 'echo \'{"decision": "block", "reason": "POLICY"}\''}


@pytest.mark.parametrize(
    ("dialect", "data", "denied"),
    [
        (
            CODEX,
            payloads.codex("PreToolUse", Path("/w")),
            lambda o: o["hookSpecificOutput"]["permissionDecision"],
        ),
        (GEMINI, payloads.gemini("BeforeTool", Path("/w")), lambda o: o["decision"]),
        (COPILOT, payloads.copilot("PreToolUse", Path("/w")), lambda o: o["permissionDecision"]),
        (CURSOR, payloads.cursor("preToolUse", Path("/w")), lambda o: o["permission"]),
    ],
)
def test_a_policy_check_that_cannot_run_denies_the_call_on_every_host(
    tmp_path: Path, dialect: Dialect, data: dict[str, Any], denied: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_PIN_CONFIG", "0")  # every call reads the file as it is
    args = flags(tmp_path, {"hooks": {"PreToolUse": [DENY]}})
    out, _ = answer(dialect, args, data)
    assert out is not None and denied(out) == "deny" and "POLICY" in json.dumps(out)
    # An invalid configuration: the call is denied, saying why.
    (tmp_path / "judge.yaml").write_text("hooks: {PreToolUse: [{type: bogus}]}\n")
    broken, _ = answer(dialect, args, data)
    assert (
        broken is not None
        and denied(broken) == "deny"
        and "invalid judge configuration" in json.dumps(broken)
    )
    # Input the dialect cannot read, whose event is known: the PreToolUse hooks' failMode denies it.
    (tmp_path / "judge.yaml").write_text(yaml.safe_dump({"hooks": {"PreToolUse": [DENY]}}))
    bad = {**data, "cwd": 42, "session_id": 42, "conversation_id": 42}
    refused, errors = answer(dialect, args, bad)
    assert refused is not None and denied(refused) == "deny", errors
    assert "Hook error: invalid hook input" in json.dumps(refused)


def test_a_stop_or_tool_result_check_that_cannot_run_goes_on_and_says_so(tmp_path: Path) -> None:
    args = flags(tmp_path, {"hooks": {"Stop": [{"type": "prompt", "prompt": "x", "model": "fake:error"}]}})
    out, _ = answer(CODEX, args, payloads.codex("Stop", tmp_path))
    assert out is not None and "decision" not in out and "could not run" in out["systemMessage"]


def test_the_deadline_denies_a_tool_call_whose_hooks_are_not_done(tmp_path: Path) -> None:
    slow = {"type": "command", "matcher": "*", "command": "sleep 60", "timeout": 120}
    args = flags(tmp_path, {"hooks": {"PreToolUse": [slow]}})
    args.timeout = 1.0
    out, _ = answer(GEMINI, args, payloads.gemini("BeforeTool", tmp_path))
    assert out is not None and out["decision"] == "deny" and "--timeout of 1 s" in out["reason"]


REWRITE = {
    "type": "command",
    "matcher": "*",
    "command": "echo '"
    + json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "ls"}}})
    + "'",
}


def test_a_rewrite_reaches_hosts_that_keep_their_approval_and_is_a_denial_on_codex(tmp_path: Path) -> None:
    args = flags(tmp_path, {"hooks": {"PreToolUse": [REWRITE]}})
    gemini, _ = answer(GEMINI, args, payloads.gemini("BeforeTool", tmp_path))
    assert gemini == {"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"command": "ls"}}}
    codex, _ = answer(CODEX, args, payloads.codex("PreToolUse", tmp_path))
    assert codex is not None
    reason = codex["hookSpecificOutput"]["permissionDecisionReason"]
    assert codex["hookSpecificOutput"]["permissionDecision"] == "deny" and "{'command': 'ls'}" in reason
    args.rewrite = "allow"
    allowed, _ = answer(CODEX, args, payloads.codex("PreToolUse", tmp_path))
    assert allowed is not None and allowed["hookSpecificOutput"]["updatedInput"] == {"command": "ls"}


def test_an_ask_is_copilots_confirmation_and_elsewhere_a_call_that_runs_with_a_note(tmp_path: Path) -> None:
    """Where no one can be asked, judge's rules let an "ask" run; Copilot CLI asks its user
    (and ``copilot -p``, which cannot, denies)."""
    said = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "ask",
        "permissionDecisionReason": "big change",
    }
    ask = {
        "type": "command",
        "matcher": "*",
        "command": "echo '" + json.dumps({"hookSpecificOutput": said}) + "'",
    }
    args = flags(tmp_path, {"hooks": {"PreToolUse": [ask]}})
    copilot, _ = answer(COPILOT, args, payloads.copilot_native("preToolUse", tmp_path))
    assert copilot == {"permissionDecision": "ask", "permissionDecisionReason": "big change"}
    codex, _ = answer(CODEX, args, payloads.codex("PreToolUse", tmp_path))
    note = "judge: a hook asks to confirm this call (big change); Codex CLI cannot ask, so it runs"
    assert codex == {"systemMessage": note}


def test_calls_judge_does_not_judge_print_nothing(tmp_path: Path) -> None:
    args = flags(tmp_path, {"hooks": {"Stop": [ALWAYS_REJECT]}})
    assert answer(CODEX, args, payloads.codex("SessionStart", tmp_path, source="startup"))[0] is None
    aborted, errors = answer(CURSOR, args, payloads.cursor("stop", tmp_path, status="aborted"))
    assert aborted is None and any("aborted" in line for line in errors)
    unconfigured, errors = answer(CODEX, flags(tmp_path, None), payloads.codex("Stop", tmp_path))
    assert unconfigured is None and any("no configuration" in line for line in errors)
    assert answer(CODEX, args, "not json")[0] is None  # nothing tells which event: only logged


def test_a_session_keeps_the_configuration_of_its_first_judged_call(tmp_path: Path) -> None:
    """The agent can edit judge's configuration; the session is judged as it began (as
    under Claude Code), and the user is told the file changed."""
    args = flags(tmp_path, {"hooks": {"PreToolUse": [DENY]}})
    first, _ = answer(CODEX, args, payloads.codex("PreToolUse", tmp_path))
    (tmp_path / "judge.yaml").write_text("hooks: {}\n")
    later, _ = answer(CODEX, args, payloads.codex("PreToolUse", tmp_path))
    assert first is not None and later is not None
    assert later["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert "changed during this session" in later["systemMessage"]
