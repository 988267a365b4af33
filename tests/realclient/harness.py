"""Drive the real Claude Code CLI headless against the local model server, with
``judge claude-code`` registered as its hook.

A :class:`ClaudeSession` owns a throw-away HOME, a project folder, a judge config and
Claude Code settings. :meth:`ClaudeSession.run` starts ``claude -p PROMPT --settings FILE
--output-format stream-json --verbose`` (bounded by a timeout) with ``ANTHROPIC_BASE_URL``
pointing at a :class:`judge.testing.LLMServer`. The agent's replies are scripted: each
request of the main agent (a request that offers tools) takes the next scripted reply,
then ``All done.``; a subagent's requests (its prompt contains :data:`SUBAGENT_TASK`)
take the subagent's script; judge prompt hooks using :data:`JUDGE_MODEL` take the
judge's script; side requests without tools get a short text.

The result keeps what Claude Code printed (stream-json events) and every request the
model received, so a test asserts on what ran (marker files) and on what the model saw
next (:func:`tool_result_of`, :func:`hook_notes`).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from judge.testing import LLMRequest, LLMServer, Reply, ToolCallSpec, say

#: Upper bound of one Claude Code run (a run of these scripted sessions takes seconds).
RUN_TIMEOUT = 90
DONE = "All done."
#: Put this in a subagent's prompt: requests containing it take ``subagent_replies``.
SUBAGENT_TASK = "[subagent task]"
#: Model of judge prompt hooks served by the same server (``model: anthropic:judge-model``).
JUDGE_MODEL = "judge-model"


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str
    requests: list[LLMRequest]
    side_requests: list[LLMRequest]

    @property
    def events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.stdout.splitlines():
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                out.append(value)
        return out

    @property
    def agent_requests(self) -> list[LLMRequest]:
        """Requests of Claude Code's agent loop (those offering tools), in order."""
        return [r for r in self.requests if r.body.get("tools") and r.model != JUDGE_MODEL]

    def explain(self) -> str:
        """For assertion messages: exit code, stderr and the end of stdout."""
        return f"exit {self.returncode}\nstderr: {self.stderr[-1500:]}\nstdout tail: {self.stdout[-2500:]}"


def tool_result_of(request: LLMRequest, tool_use_id: str) -> dict[str, Any] | None:
    """The ``tool_result`` block for ``tool_use_id`` in a request (its ``content`` as text)."""
    for message in request.messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("tool_use_id") == tool_use_id:
                found = dict(block)
                found["text"] = _text(block.get("content"))
                return found
    return None


def hook_notes(request: LLMRequest) -> str:
    """Everything Claude Code added to a request outside tool results and the prompt:
    ``system`` role messages (hook feedback, additional context) and ``<system-reminder>``
    user texts."""
    parts = []
    for message in request.messages:
        text = _text(message.get("content"))
        if message.get("role") == "system" or "<system-reminder>" in text or "hook" in text.lower():
            parts.append(text)
    return "\n".join(parts)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(b.get("text", b.get("content"))) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def judge_under_test() -> dict[str, str]:
    """Environment for judge processes: ``JUDGE_TEST_HOOK_PYTHONPATH`` runs them from
    another checkout of judge (e.g. a branch under review)."""
    other = os.environ.get("JUDGE_TEST_HOOK_PYTHONPATH")
    return {"PYTHONPATH": other} if other else {}


@dataclass
class ClaudeSession:
    claude: Path
    root: Path
    judge_config: dict[str, Any] = field(default_factory=dict)
    events: tuple[str, ...] = ("PreToolUse", "PostToolUse", "Stop")
    judge_args: tuple[str, ...] = ()
    hook_timeout: int = 60
    env: dict[str, str] = field(default_factory=dict)
    #: Where ``judge claude-code --resident`` (the installer's default) keeps its resident
    #: judge: the test run's own folder, never the user's ``$XDG_RUNTIME_DIR/judge``.
    runtime: Path | None = None

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.project = self.root / "project"
        self.data = self.root / "data"
        for folder in (self.home, self.project, self.data):
            folder.mkdir(parents=True, exist_ok=True)
        # Command hooks may run as another user (judge runs them as nobody when it is
        # root): what they write goes to a folder outside the private test folder.
        self.shared = Path(tempfile.mkdtemp(prefix="judge-realclient-"))
        self.shared.chmod(0o755)
        self.markers = self.shared / "markers"
        self.tmp = self.shared / "tmp"
        self.markers.mkdir()
        self.markers.chmod(0o777)
        self.tmp.mkdir()
        self.tmp.chmod(0o755)
        self.config_path = self.root / "judge.yaml"
        self.settings_path = self.root / "settings.json"
        self.state_path = self.root / "state.sqlite"

    def judge_command(self) -> str:
        parts = [sys.executable, "-m", "judge", "claude-code", "--config", str(self.config_path)]
        parts += ["--state", str(self.state_path), "--data-dir", str(self.data), *self.judge_args]
        return shlex.join(parts)

    def settings(self) -> dict[str, Any]:
        """Claude Code settings registering ``judge claude-code`` on :attr:`events`."""
        hooks: dict[str, Any] = {}
        for event in self.events:
            entry: dict[str, Any] = {
                "hooks": [{"type": "command", "command": self.judge_command(), "timeout": self.hook_timeout}]
            }
            if event in ("PreToolUse", "PreSkillShellCommand", "PostToolUse", "PostToolUseFailure"):
                entry["matcher"] = "*"
            hooks[event] = [entry]
        return {"hooks": hooks}

    def run(
        self,
        prompt: str,
        replies: list[Reply],
        *,
        allowed_tools: str = "Bash,Read,Write,Edit,Grep,Glob,Task",
        extra_args: tuple[str, ...] = (),
        settings: dict[str, Any] | None = None,
        subagent_replies: list[Reply] | None = None,
        judge_replies: list[Reply] | None = None,
        judge_handler: Callable[[LLMRequest], Reply] | None = None,
    ) -> RunResult:
        self.config_path.write_text(yaml.safe_dump(self.judge_config, sort_keys=False))
        self.settings_path.write_text(json.dumps(settings if settings is not None else self.settings()))
        script = deque(replies)
        sub_script = deque(subagent_replies or [])
        judge_script = deque(judge_replies or [])

        def answer(request: LLMRequest) -> Reply:
            if request.model == JUDGE_MODEL:
                if judge_handler is not None:
                    return judge_handler(request)
                return judge_script.popleft() if judge_script else say('{"ok": true}')
            if not request.body.get("tools"):
                return say("Scripted session")
            queue = sub_script if SUBAGENT_TASK in request.text else script
            return queue.popleft() if queue else say(DONE)

        with LLMServer(handler=answer, default=say(DONE)) as server:
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": str(self.home),
                "ANTHROPIC_BASE_URL": server.anthropic_base_url,
                "ANTHROPIC_API_KEY": "sk-ant-test-dummy",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1",
                "JUDGE_TEST_MARKERS": str(self.markers),
                **({"JUDGE_RUNTIME_DIR": str(self.runtime)} if self.runtime else {}),
                **self.env,
            }
            env.update(judge_under_test())
            command = [str(self.claude), "-p", prompt, "--settings", str(self.settings_path)]
            command += ["--output-format", "stream-json", "--verbose"]
            if allowed_tools:
                command += ["--allowedTools", allowed_tools]
            command += list(extra_args)
            try:
                done = subprocess.run(
                    command,
                    cwd=self.project,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=RUN_TIMEOUT,
                    stdin=subprocess.DEVNULL,
                    check=False,
                )
            except subprocess.TimeoutExpired as exc:
                raise AssertionError(f"claude did not finish within {RUN_TIMEOUT} s: {exc.stdout!r}") from exc
            return RunResult(
                done.returncode, done.stdout, done.stderr, list(server.requests), list(server.side_requests)
            )

    def marker(self, name: str) -> Path:
        return self.markers / name

    def install(self) -> dict[str, Any]:
        """Write :attr:`judge_config` and run ``judge claude-code install`` in the project, as a
        user would; the project settings it wrote."""
        self.config_path.write_text(yaml.safe_dump(self.judge_config))
        done = subprocess.run(
            [sys.executable, "-m", "judge", "claude-code", "install", "--config", str(self.config_path)],
            cwd=self.project,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        settings: dict[str, Any] = json.loads((self.project / ".claude" / "settings.json").read_text())
        return settings

    def close(self) -> None:
        """Remove the folder shared with the hooks."""
        shutil.rmtree(self.shared, ignore_errors=True)

    def transcript_lines(self, *, everything: bool = False) -> list[dict[str, Any]]:
        """The session's JSONL transcript (the only one under the throw-away HOME);
        ``everything`` adds the subagents' transcripts."""
        projects = self.home / ".claude" / "projects"
        files = sorted(projects.rglob("*.jsonl") if everything else projects.glob("*/*.jsonl"))
        lines: list[dict[str, Any]] = []
        for file in files:
            lines += [json.loads(line) for line in file.read_text().splitlines() if line.strip()]
        return lines

    def audit(self) -> list[dict[str, Any]]:
        path = self.data / "audit_log.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def append_rows_command(*rows: dict[str, Any]) -> str:
    """A Bash command the scripted agent runs to append ``rows`` to its own session
    transcript. Claude Code may write the file after the tool has started (on a loaded
    machine), so the command waits up to a minute for the file to hold rows first."""
    wait = (
        "for i in $(seq 600); do T=$(ls -t ~/.claude/projects/*/*.jsonl 2>/dev/null | head -1);"
        ' [ -s "$T" ] && break; sleep 0.1; done; '
    )
    return wait + "; ".join(f'echo {shlex.quote(json.dumps(row))} >> "$T"' for row in rows)


def tool(name: str, tool_use_id: str, /, *, text: str | None = None, **arguments: Any) -> Reply:
    """The agent calls one tool with a known ``tool_use_id``."""
    return Reply(text=text, tool_calls=(ToolCallSpec(name, arguments, id=tool_use_id),))


def command_hook(script: str, *, matcher: str | None = None, **options: Any) -> dict[str, Any]:
    """A judge command hook entry running a bash script."""
    hook: dict[str, Any] = {"type": "command", "script": "#!/bin/bash\n" + script}
    if matcher is not None:
        hook["matcher"] = matcher
    hook.update(options)
    return hook


def record_context(markers: Path, name: str) -> str:
    """Bash lines saving the hook's context (stdin) as ``markers/<name>-<n>.json``."""
    folder = shlex.quote(str(markers))
    return f'n=$(ls {folder} | grep -c "^{name}-")\ncat > {folder}/{name}-$n.json\n'


def recorded(markers: Path, name: str) -> list[dict[str, Any]]:
    """The contexts :func:`record_context` saved, in order."""
    files = sorted(markers.glob(f"{name}-*.json"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    return [json.loads(p.read_text()) for p in files]
