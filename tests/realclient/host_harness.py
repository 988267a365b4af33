"""Drive the real Codex, Gemini and Copilot CLIs headless, with judge registered by its own installer.

A :class:`HostSession` owns a throw-away HOME (where each host keeps its settings and
judge its default state file), a work folder and a judge configuration.
:meth:`HostSession.install` runs ``judge <host> install`` as a user would;
:meth:`HostSession.run` starts the host on a prompt:

* **Codex** (``codex exec``) and **Copilot** (``copilot -p``) talk to a
  :class:`judge.testing.LLMServer` - Codex through the Responses API (a provider in
  ``$CODEX_HOME/config.toml``), Copilot through Chat Completions (``COPILOT_OFFLINE`` with
  a BYOK provider, no GitHub login);
* **Gemini** (``gemini -p``) reads its model's answers from a ``--fake-responses`` file
  (Gemini's own test mechanism: no server at all).

The agent's replies are scripted (``say``/``call``); judge prompt hooks naming
``openai:judge-model`` are answered by the same server from the judge's script. The
result keeps what the host printed and every request, so a test asserts on what ran
(files in the work folder) and on what the model saw next.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from judge.testing import LLMRequest, LLMServer, Reply, say
from tests.realclient.harness import judge_under_test

#: Upper bound of one host run (a scripted session takes seconds).
RUN_TIMEOUT = 180
JUDGE_MODEL = "judge-model"
DONE = "All done."


@dataclass
class HostRun:
    returncode: int
    stdout: str
    stderr: str
    requests: list[LLMRequest]

    @property
    def agent_requests(self) -> list[LLMRequest]:
        """The agent's own model requests (those offering tools), in order."""
        return [r for r in self.requests if r.model != JUDGE_MODEL and r.body.get("tools")]

    @property
    def judge_requests(self) -> list[LLMRequest]:
        return [r for r in self.requests if r.model == JUDGE_MODEL]

    def explain(self) -> str:
        return f"exit {self.returncode}\nstderr: {self.stderr[-3000:]}\nstdout tail: {self.stdout[-2000:]}"


def gemini_turn(reply: Reply) -> str:
    """One ``--fake-responses`` line: the reply as a streamed Gemini answer."""
    parts: list[dict[str, Any]] = []
    if reply.text is not None:
        parts.append({"text": reply.text})
    parts += [{"functionCall": {"name": c.name, "args": c.arguments}} for c in reply.tool_calls]
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    }
    return json.dumps({"method": "generateContentStream", "response": [chunk]})


@dataclass
class HostSession:
    host: str
    binary: Path
    root: Path
    judge_config: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.home = self.root / "home"
        self.work = self.root / "work"
        for folder in (self.home, self.work):
            folder.mkdir(parents=True, exist_ok=True)
        # Command hooks may run as another user (judge runs them as nobody when it is root).
        self.shared = Path(tempfile.mkdtemp(prefix="judge-hosts-"))
        self.shared.chmod(0o777)
        self.config_path = self.root / "judge.yaml"
        self.state_path = self.home / ".local" / "share" / "judge" / "state.sqlite"
        self.codex_home = self.home / ".codex"
        if self.host == "gemini":  # the settings judge's installer must keep
            settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
            (self.home / ".gemini").mkdir()
            (self.home / ".gemini" / "settings.json").write_text(json.dumps(settings))

    def base_env(self) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            "CODEX_HOME": str(self.codex_home),
            **judge_under_test(),
            **self.env,
        }
        return env

    def install(self, *extra: str) -> subprocess.CompletedProcess[str]:
        """Write :attr:`judge_config` and run ``judge <host> install`` in the work folder."""
        self.config_path.write_text(yaml.safe_dump(self.judge_config, sort_keys=False))
        command = [sys.executable, "-m", "judge", self.host, "install", "--config", str(self.config_path)]
        done = subprocess.run(
            [*command, *extra],
            cwd=self.work,
            env=self.base_env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done

    def _host_command(self, prompt: str, server: LLMServer) -> tuple[list[str], dict[str, str]]:
        env = self.base_env()
        if self.host == "codex":
            self.codex_home.mkdir(exist_ok=True)
            provider = (
                f'model = "agent-model"\nmodel_provider = "local"\n\n[model_providers.local]\n'
                f'name = "local"\nbase_url = "{server.openai_base_url}"\nwire_api = "responses"\n'
                'env_key = "LOCAL_MODEL_KEY"\n'
            )
            config = self.codex_home / "config.toml"
            kept = config.read_text() if config.exists() else ""
            kept = kept.split("# judge-tests: end of provider\n", 1)[-1]
            config.write_text(provider + "# judge-tests: end of provider\n" + kept)
            env.update(LOCAL_MODEL_KEY="test-key", OPENAI_API_KEY="test-key")
            env["OPENAI_BASE_URL"] = server.openai_base_url
            command = [str(self.binary), "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access"]
            return [*command, prompt], env
        if self.host == "copilot":
            env.update(
                COPILOT_OFFLINE="true",
                COPILOT_PROVIDER_BASE_URL=server.openai_base_url,
                COPILOT_PROVIDER_API_KEY="test-key",
                COPILOT_MODEL="agent-model",
                # Copilot removes OPENAI_API_KEY and OPENAI_BASE_URL from its hooks' environment
                JUDGE_OPENAI_API_KEY="test-key",
                JUDGE_OPENAI_BASE_URL=server.openai_base_url,
            )
            return [str(self.binary), "-p", prompt, "--allow-all-tools", "--no-auto-update"], env
        env.update(
            GEMINI_API_KEY="test-key",
            GEMINI_CLI_TRUST_WORKSPACE="true",
            OPENAI_API_KEY="test-key",
            OPENAI_BASE_URL=server.openai_base_url,
        )
        fake = self.root / "gemini.responses"
        command = [str(self.binary), "-m", "gemini-2.5-flash", "--approval-mode", "yolo"]
        return [*command, "--fake-responses", str(fake), "-p", prompt], env

    def run(
        self,
        prompt: str,
        replies: list[Reply],
        *,
        judge_replies: list[Reply] | None = None,
        judge_handler: Callable[[LLMRequest], Reply] | None = None,
    ) -> HostRun:
        """Run the host on ``prompt``; the agent answers with ``replies`` in order, then
        :data:`DONE`."""
        script = deque(replies)
        judge_script = deque(judge_replies or [])
        if self.host == "gemini":
            turns = [*replies, *([say(DONE)] * 4)]
            (self.root / "gemini.responses").write_text("".join(gemini_turn(r) + "\n" for r in turns))

        def answer(request: LLMRequest) -> Reply:
            if request.model == JUDGE_MODEL:
                if judge_handler is not None:
                    return judge_handler(request)
                return judge_script.popleft() if judge_script else say('{"ok": true}')
            if not request.body.get("tools"):
                return say("Scripted session")
            return script.popleft() if script else say(DONE)

        with LLMServer(handler=answer, default=say(DONE)) as server:
            command, env = self._host_command(prompt, server)
            try:
                done = subprocess.run(
                    command,
                    cwd=self.work,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=RUN_TIMEOUT,
                    stdin=subprocess.DEVNULL,
                    check=False,
                )
            except subprocess.TimeoutExpired as exc:
                late = f"{self.host} did not finish within {RUN_TIMEOUT} s: {exc.stderr!r}"
                raise AssertionError(late) from exc
            return HostRun(done.returncode, done.stdout, done.stderr, list(server.requests))

    def close(self) -> None:
        import shutil

        shutil.rmtree(self.shared, ignore_errors=True)
