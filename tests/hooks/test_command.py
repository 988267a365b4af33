"""Command hooks in the sandbox: hostile and careless scripts, the environment they get (an
allow-list), answers holding lone surrogates, and the transcript copy made for a hook that
runs as another user.

Each test runs a real bash or python3 process. Timeouts are 1 s so the whole file
stays quick; the bounds asserted are behaviour bounds with generous margins.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from judge.config import Hook, config_from_data
from judge.errors import HookError
from judge.hooks import command as commands
from judge.hooks.command import ENV_ALLOWLIST, OUTPUT_CAP, run_command_hook
from judge.hooks.engine import Engine
from tests.security.sandbox_probe import pids_with, token

SECRETS = {
    "OPENAI_API_KEY": "sk-openai-secret",
    "ANTHROPIC_API_KEY": "sk-ant-secret",
    "JUDGE_API_TOKEN": "judge-token-secret",
    "GITHUB_TOKEN": "ghp-secret",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
    "MY_SERVICE_PASSWORD": "hunter2",
}


def command(text: str, **options: object) -> Hook:
    return Hook.model_validate({"type": "command", "command": text, **options})


def script(text: str, **options: object) -> Hook:
    return Hook.model_validate({"type": "command", "script": text, **options})


class NoJudge:
    async def evaluate(self, request: object) -> object:
        raise AssertionError("no prompt hooks here")


def engine_for(event: str, hook: Mapping[str, object]) -> Engine:
    return Engine(config_from_data({"hooks": {event: [hook]}}), judge=NoJudge())  # type: ignore[arg-type]


def stop_ctx(**extra: object) -> dict[str, object]:
    return {"hook_event_name": "Stop", "final_output": "Done.", **extra}


# -- the exit-code table and output --------------------------------------------------------


async def test_context_arrives_on_stdin_verbatim_and_stdin_is_closed() -> None:
    payload = json.dumps({"final_output": "x" * 1000, "nested": {"a": [1, 2]}})
    start = time.perf_counter()
    result = await run_command_hook(command("cat", timeout=5), payload)
    assert time.perf_counter() - start < 3  # cat ends because stdin is closed after the context
    assert (result.exit_code, result.timed_out) == (0, False)
    assert result.stdout == payload


async def test_exit_code_137_is_reported_and_becomes_a_hook_error() -> None:
    result = await run_command_hook(command("exit 137"), "{}")
    assert (result.exit_code, result.timed_out) == (137, False)
    decision = await engine_for(
        "Stop", {"type": "command", "command": "exit 137", "failMode": "block"}
    ).evaluate("Stop", stop_ctx())
    assert decision.decision == "block"
    assert decision.reason == "Hook error: command exited with code 137"


async def test_invalid_json_is_a_hook_error_never_a_pass() -> None:
    hook = {"type": "command", "command": "echo 'ok: true'", "matcher": "*"}
    decision = await engine_for("PreToolUse", hook).evaluate(
        "PreToolUse", {"tool_name": "Bash", "tool_input": {}}
    )
    assert decision.decision == "block"
    assert decision.hooks[0].error == "hook output is not valid JSON (Expecting value): 'ok: true'"


async def test_bash_and_python_shebangs_run_by_their_interpreter() -> None:
    bash = script(
        '#!/bin/bash\nread -r line\nwords=(a b c)\n[[ ${#words[@]} == 3 ]] && echo "bash:${line}"\n'
    )
    result = await run_command_hook(bash, '{"k": 1}')
    assert (result.exit_code, result.stdout) == (0, 'bash:{"k": 1}\n')
    python = script(
        "#!/usr/bin/env python3\n"
        "import json, sys\n"
        "ctx = json.load(sys.stdin)\n"
        "print(json.dumps({'ok': False, 'reason': f'py{sys.version_info[0]}:{ctx[\"final_output\"]}'}))\n"
    )
    decision = await engine_for("Stop", python.model_dump(by_alias=True, exclude_none=True)).evaluate(
        "Stop", stop_ctx(final_output="hello")
    )
    assert (decision.decision, decision.reason) == ("block", "py3:hello")


def test_a_script_without_a_shebang_is_refused_not_run_as_bash() -> None:
    # Run as bash, a Python body fails with exit 2 ("import: command not found"), which
    # judge would read as a deliberate block with that text as the reason.
    with pytest.raises(ValidationError, match=r"no #! line; start it with #!/usr/bin/env python3"):
        script("import json, sys\nsys.exit(0)\n")


# -- hangs, forks, floods ------------------------------------------------------------------


async def test_a_hanging_hook_is_killed_at_its_timeout_and_fail_mode_applies() -> None:
    start = time.perf_counter()
    result = await run_command_hook(command("sleep 30", timeout=1), "{}")
    elapsed = time.perf_counter() - start
    assert result.timed_out and result.exit_code is None
    assert elapsed < 2.5, f"took {elapsed:.2f}s for a 1 s timeout"
    for mode, expected in (
        ("allow", ("allow", None)),
        ("block", ("block", "Hook error: timed out after 1s")),
    ):
        start = time.perf_counter()
        hook = {"type": "command", "command": "sleep 30", "timeout": 1, "failMode": mode}
        decision = await engine_for("Stop", hook).evaluate("Stop", stop_ctx())
        assert time.perf_counter() - start < 2.5
        assert (decision.decision, decision.reason) == expected
        assert decision.hooks[0].error == "timed out after 1s"


async def test_a_hook_that_ignores_sigterm_still_dies() -> None:
    start = time.perf_counter()
    result = await run_command_hook(command("trap '' TERM INT HUP; sleep 30", timeout=1), "{}")
    assert result.timed_out
    assert time.perf_counter() - start < 2.5


async def test_forked_children_do_not_outlive_the_hook() -> None:
    marker, spelled = token()
    start = time.perf_counter()
    result = await run_command_hook(command(f"sleep {spelled} & echo started", timeout=5), "{}")
    assert (result.exit_code, result.timed_out, result.stdout) == (0, False, "started\n")
    assert time.perf_counter() - start < 2  # the child holding stdout does not stall the hook
    assert pids_with(marker) == []


async def test_detached_children_without_our_pipes_are_killed_too() -> None:
    marker, spelled = token()
    text = f"sleep {spelled} </dev/null >/dev/null 2>&1 & while ! pgrep -f {marker} >/dev/null; do :; done"
    result = await run_command_hook(command(text, timeout=5), "{}")
    assert result.exit_code == 0
    assert pids_with(marker) == []


async def test_forked_children_are_killed_on_timeout() -> None:
    marker, spelled = token()
    start = time.perf_counter()
    result = await run_command_hook(command(f"sleep {spelled} & sleep 30", timeout=1), "{}")
    assert result.timed_out
    assert time.perf_counter() - start < 2.5
    assert pids_with(marker) == []


@pytest.mark.slow
async def test_a_100_mb_flood_is_capped_quickly_without_memory_blowup() -> None:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    start = time.perf_counter()
    result = await run_command_hook(command("head -c 100000000 /dev/zero | tr '\\0' a", timeout=30), "{}")
    elapsed = time.perf_counter() - start
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert result.exit_code == 0
    assert len(result.stdout) == OUTPUT_CAP
    assert result.stdout_truncated and result.truncated
    assert grown_mb < 50, f"peak memory grew by {grown_mb:.0f} MB"
    assert elapsed < 20


async def test_an_endless_flood_is_stopped_by_the_timeout() -> None:
    start = time.perf_counter()
    result = await run_command_hook(command("yes", timeout=1), "{}")
    assert result.timed_out
    assert len(result.stdout) == OUTPUT_CAP
    assert time.perf_counter() - start < 3


async def test_a_flooded_stdout_is_a_hook_error_and_stderr_floods_are_harmless() -> None:
    flood = {"type": "command", "command": "head -c 3000000 /dev/zero | tr '\\0' a", "failMode": "block"}
    decision = await engine_for("Stop", flood).evaluate("Stop", stop_ctx())
    assert (decision.decision, decision.reason) == (
        "block",
        "Hook error: command output exceeded the 1 MB cap",
    )
    noisy = {"type": "command", "command": "head -c 3000000 /dev/zero >&2; echo '{\"ok\": true}'"}
    decision = await engine_for("Stop", noisy).evaluate("Stop", stop_ctx())
    assert decision.decision == "allow"
    assert decision.hooks[0].error is None


async def test_a_script_that_does_not_read_a_large_context_does_not_deadlock() -> None:
    big = json.dumps({"final_output": "x" * (8 * 1024 * 1024)})
    start = time.perf_counter()
    result = await run_command_hook(command("echo '{\"ok\": true}'", timeout=5), big)
    assert (result.exit_code, result.timed_out) == (0, False)
    assert result.stdout.strip() == '{"ok": true}'
    assert time.perf_counter() - start < 4
    counted = await run_command_hook(command("wc -c", timeout=5), big)
    assert int(counted.stdout) == len(big.encode())


async def test_a_script_that_reads_a_little_and_exits_does_not_deadlock() -> None:
    big = json.dumps({"final_output": "y" * (4 * 1024 * 1024)})
    result = await run_command_hook(command("head -c 10 >/dev/null; exit 2", timeout=5), big)
    assert (result.exit_code, result.timed_out) == (2, False)


# -- environment, injection, working dir ------------------------------------------------


async def test_secrets_in_the_parent_environment_are_not_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    result = await run_command_hook(command("env"), "{}")
    env = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    for name, value in SECRETS.items():
        assert name not in env
        assert value not in result.stdout
    assert env["HOME"] != os.environ.get("HOME")
    assert "PATH" in env
    probe = script(
        "#!/usr/bin/env python3\n"
        "import os\n"
        "keys = [k for k in ('OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'JUDGE_API_TOKEN', 'GITHUB_TOKEN')"
        " if os.environ.get(k)]\n"
        "print('found:' + ','.join(keys))\n"
    )
    result = await run_command_hook(probe, "{}")
    assert result.stdout.strip() == "found:"


async def test_engine_passes_the_event_and_transcript_but_no_secrets(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    transcript = tmp_path / "t.txt"
    transcript.write_text("hello\n")
    hook = {
        "type": "command",
        "command": 'echo "$JUDGE_HOOK_EVENT|$(cat "$JUDGE_TRANSCRIPT")|${OPENAI_API_KEY:-none}" >&2; exit 2',
    }
    decision = await engine_for("Stop", hook).evaluate("Stop", stop_ctx(), transcript=transcript)
    # (as root the hook runs as nobody and gets its own copy of the private transcript)
    assert decision.reason == "Stop|hello|none"


#: What the sandbox sets itself, beside the parent's allow-listed variables.
SANDBOX_SET = {"HOME", "TMPDIR", "PYTHONIOENCODING"}


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")
async def test_the_hook_environment_is_an_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    unlisted = {
        "DATABASE_URL": "postgresql://app:pw@db/prod",
        "SENTRY_DSN": "https://key@sentry.example/1",
        "COMPANY_INTERNAL_SETTING": "internal-setting-value-7",  # (not a substring of a temp dir's name)
    }
    for name, value in unlisted.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TZ", "UTC")  # listed: passed through
    # The environment the hook's process was started with, as the kernel recorded it
    # (a shell or an interpreter shim adds variables of its own later).
    result = await run_command_hook(command("tr '\\0' '\\n' < /proc/$$/environ"), "{}")
    seen = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert "PATH" in seen, result
    assert set(seen) <= set(ENV_ALLOWLIST) | SANDBOX_SET, set(seen) - set(ENV_ALLOWLIST) - SANDBOX_SET
    for name, value in unlisted.items():
        assert name not in seen and value not in result.stdout
    assert seen["TZ"] == "UTC"


INJECTIONS = [
    "$(touch {m})",
    "`touch {m}`",
    "'; touch {m}; '",
    '"; touch {m}; "',
    '\\"$(touch {m})\\"',
    "{m}\ntouch {m}",
]


@pytest.mark.parametrize("template", INJECTIONS)
async def test_context_values_cannot_inject_commands(hook_writable: Path, template: str) -> None:
    marker = hook_writable / "injected"
    payload = template.format(m=marker)
    # The hook reads the context into a variable and uses it unquoted and quoted.
    hook = {
        "type": "command",
        "command": 'input=$(cat); echo "$input" > /dev/null; echo $input > /dev/null',
        "matcher": "*",
    }
    context = {
        "tool_name": "Bash",
        "tool_input": {"command": payload},
        "tool_result": payload,
        "note": payload,
    }
    decision = await engine_for("PostToolUse", hook).evaluate("PostToolUse", context)
    assert decision.decision == "allow"
    echoed = await run_command_hook(command("cat"), json.dumps(context))
    assert json.loads(echoed.stdout)["note"] == payload  # delivered verbatim, as data
    assert not marker.exists()


async def test_working_dir_is_fresh_and_removed_afterwards() -> None:
    text = "pwd; ls -A | tr '\\n' ' '; echo; touch left-behind; mkdir -p sub/deeper; chmod 500 sub"
    first = await run_command_hook(command(text), "{}")
    second = await run_command_hook(command(text), "{}")
    dir1, listing1 = first.stdout.splitlines()[:2]
    dir2, listing2 = second.stdout.splitlines()[:2]
    assert dir1 != dir2
    assert listing1.strip() == listing2.strip() == ""  # nothing left over from an earlier hook
    assert not Path(dir1).exists() and not Path(dir2).exists()
    assert Path(dir1).parent != Path.cwd()


async def test_working_dir_of_a_script_holds_only_the_script() -> None:
    result = await run_command_hook(script("#!/bin/bash\nls -A\n"), "{}")
    assert result.stdout.split() == [".hook-script"]


async def test_unexpected_errors_inside_the_engine_become_hook_errors() -> None:
    class Exploding:
        async def evaluate(self, request: object) -> object:
            raise HookError("")

    config = config_from_data({"hooks": {"Stop": [{"prompt": "p", "failMode": "block"}]}})
    decision = await Engine(config, judge=Exploding()).evaluate("Stop", stop_ctx())  # type: ignore[arg-type]
    assert decision.reason == "Hook error: HookError"


# -- lone surrogates -------------------------------------------------------------------------

#: What decoding bytes that are not UTF-8 with surrogateescape gives (os.fsdecode, a
#: subprocess's output), and what a JSON "\udcff" escape in model-written text becomes.
LONE = "3 failed \udcff"


async def test_a_lone_surrogate_reaches_a_command_hook_as_the_same_json() -> None:
    context = {"hook_event_name": "Stop", "final_output": LONE}
    hook = Hook.model_validate({"type": "command", "command": "cat", "timeout": 5})
    started = time.monotonic()
    result = await run_command_hook(hook, json.dumps(context, ensure_ascii=False))
    assert not result.timed_out and time.monotonic() - started < 4
    assert result.stdout.isascii() or "\\udcff" in result.stdout
    assert json.loads(result.stdout) == context


def test_a_command_hook_judges_an_answer_holding_a_lone_surrogate() -> None:
    hook = {"type": "command", "command": "echo 'run the tests' >&2; exit 2", "timeout": 5}
    engine = Engine(config_from_data({"hooks": {"Stop": [hook]}}))
    decision = asyncio.run(engine.evaluate("Stop", {"final_output": f"Done. {LONE}"}))
    assert decision.decision == "block" and decision.reason == "run the tests"
    assert decision.hooks[0].error is None


# -- the transcript copy for another user ----------------------------------------------------


async def test_a_transcript_copy_for_another_user_is_off_the_loop_and_within_the_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # under root every command hook gets its own copy of a transcript the agent sized
    stops: list[threading.Event] = []

    def slow_copy(transcript: Path, workdir: str, user: Any, stop: threading.Event) -> str:
        stops.append(stop)
        stop.wait(5)
        return str(transcript)

    monkeypatch.setattr(commands, "_transcript_for", slow_copy)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.02)
            ticks += 1

    beat = asyncio.ensure_future(ticker())
    hook = Hook.model_validate({"type": "command", "command": "true", "timeout": 1})
    started = time.monotonic()
    with pytest.raises(HookError, match="copying the transcript"):
        await run_command_hook(hook, "{}", timeout=0.3, transcript=tmp_path / "t.txt")
    beat.cancel()
    assert time.monotonic() - started < 1.2
    assert ticks >= 5  # the event loop kept running while the copy went on
    assert stops and stops[0].is_set()  # and the copy is told to stop, not left running


def test_a_transcript_copy_is_whole_and_stops_when_told(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(commands, "COPY_CHUNK", 1000)
    source = tmp_path / "t.txt"
    source.write_bytes(bytes(range(256)) * 40)
    commands._copy_until(source, tmp_path / "copy.txt", threading.Event())
    assert (tmp_path / "copy.txt").read_bytes() == source.read_bytes()
    stop = threading.Event()
    stop.set()
    with pytest.raises(HookError, match="stopped"):
        commands._copy_until(source, tmp_path / "stopped.txt", stop)
    assert (tmp_path / "stopped.txt").stat().st_size == 0
