"""Walk through the gate service end to end (run by scripts/demo.sh).

    python examples/demo/client.py http://127.0.0.1:8080

Sends the hook events an agent platform would send and prints each decision. Exits 1
when a decision is not the expected one, so the demo doubles as a smoke test.
Standard library only; honours JUDGE_API_TOKEN when the service requires it.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TRANSCRIPT = (HERE / "transcripts" / "incident-42.txt").read_text(encoding="utf-8")


class Demo:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = os.environ.get("JUDGE_API_TOKEN") or None
        self.failures: list[str] = []

    def call(self, method: str, path: str, body: bytes | None = None, ctype: str = "application/json") -> Any:
        headers = {"Content-Type": ctype} if body is not None else {}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.base_url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                status, payload = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, payload = exc.code, exc.read()
        return status, (json.loads(payload) if payload else None)

    def hook(self, event: str, context: dict[str, Any]) -> dict[str, Any]:
        status, decision = self.call("POST", f"/api/v2/hooks/{event}", json.dumps(context).encode())
        if status != 200:
            raise SystemExit(f"POST /api/v2/hooks/{event} answered {status}: {decision}")
        result: dict[str, Any] = decision
        return result

    def expect(self, what: str, got: Any, want: Any) -> None:
        if got != want:
            self.failures.append(f"{what}: expected {want!r}, got {got!r}")
            print(f"   !! unexpected: {what} is {got!r}, expected {want!r}")


def show(decision: dict[str, Any]) -> None:
    verdict = decision["decision"].upper()
    extra = []
    if decision.get("outcome"):  # how a Stop ended: approved, rejected, forced, impossible, ...
        extra.append(f"outcome {decision['outcome']}")
    if decision.get("forcedStop"):
        extra.append("FORCED STOP: maxRejections reached, the agent stops anyway")
    if decision.get("rejectionCount") and (decision["decision"] == "block" or decision.get("forcedStop")):
        extra.append(f"rejection count {decision['rejectionCount']}")
    print(f"   decision: {verdict}" + (f"  ({'; '.join(extra)})" if extra else ""))
    if decision.get("reason"):
        for line in decision["reason"].splitlines():
            print(f"   reason:   {line}")
    specific = decision.get("hookSpecificOutput")
    if specific:
        print(f"   additionalContext for the agent: {specific['additionalContext']}")
    for hook in decision["hooks"]:
        model = hook.get("model") or ""
        label = ""
        if model.startswith("fake:"):
            label = "  <- FAKE provider (packaged, deterministic rules; no LLM, no API key)"
        where = f"{hook['level']}#{hook['index']} {hook['type']}"
        outcome = hook["decision"] + (f" error={hook['error']}" if hook.get("error") else "")
        print(f"   hook {where:<16} {outcome:<6} {hook['durationMs']:>7.1f} ms  {model}{label}")


def step(title: str) -> None:
    print(f"\n== {title}")


def run(demo: Demo) -> int:
    step("GET /healthz")
    status, body = demo.call("GET", "/healthz")
    print(f"   {status} {body}")
    demo.expect("healthz", status, 200)

    step("Stop: the agent's answer is unfinished -> the gate sends it back (session incident-42)")
    answer = "The checkout pod was OOMKilled. Next step: raise the memory limit. Task complete."
    print(f"   final_output: {answer!r}")
    context: dict[str, Any] = {"final_output": answer, "session_id": "incident-42", "transcript": TRANSCRIPT}
    decision = demo.hook("Stop", context)
    show(decision)
    demo.expect("unfinished answer", decision["decision"], "block")

    step("Stop: the agent finished the work -> allowed (execution_summary inside --transcripts-dir)")
    answer = (
        "The checkout pod was OOMKilled; I raised its memory limit to 512Mi and the rollout "
        "succeeded, so the 502s are gone. Task complete."
    )
    print(f"   final_output: {answer!r}")
    context = {"final_output": answer, "session_id": "incident-42", "execution_summary": "incident-42.txt"}
    decision = demo.hook("Stop", context)
    show(decision)
    demo.expect("complete answer", decision["decision"], "allow")

    step("Stop: an answer that leaks a credential -> blocked by the command hook")
    decision = demo.hook("Stop", {"final_output": "Fixed it with password: hunter2. Task complete."})
    show(decision)
    demo.expect("leaked credential", decision["decision"], "block")

    step("PreToolUse: a destructive shell command is denied before it runs")
    context = {"tool_name": "Bash", "tool_input": {"command": "rm -rf /var/lib/shop"}}
    decision = demo.hook("PreToolUse", context)
    show(decision)
    demo.expect("rm -rf", decision["decision"], "block")

    step("PostToolUse: a change is audited and the agent gets extra context")
    context = {
        "tool_name": "kubectl_apply",
        "tool_input": {"deployment": "checkout", "memory": "512Mi"},
        "tool_result": "deployment.apps/checkout configured",
    }
    decision = demo.hook("PostToolUse", context)
    show(decision)
    demo.expect("post tool use", decision["decision"], "allow")

    step("Stop loop: an agent that never finishes is forced through at maxRejections (3)")
    for attempt in range(1, 4):
        answer = f"Still investigating (attempt {attempt}); I will report back."
        decision = demo.hook("Stop", {"final_output": answer, "session_id": "stubborn"})
        print(f" attempt {attempt}: final_output {answer!r}")
        show(decision)
    demo.expect("third rejection forces the stop", decision.get("forcedStop"), True)

    step("PUT a custom agent (YAML resource document); its hooks run after the agent-level ones")
    yaml_doc = (HERE / "custom_agent.yaml").read_bytes()
    path = "/api/v2/extendedAgent/agents/release-notes"
    status, stored = demo.call("PUT", path, yaml_doc, "application/yaml")
    events = sorted(stored["properties"]["hooks"])
    print(f"   PUT {path} -> {status}; stored agent {stored['name']!r} with hooks for {events}")
    demo.expect("PUT custom agent", status, 202)
    answer = "Deployed checkout with a higher memory limit. Task complete."
    decision = demo.hook("Stop", {"final_output": answer, "agent_name": "release-notes"})
    show(decision)
    demo.expect("custom agent hook", decision["decision"], "block")

    step("A malformed request is a 4xx with a JSON error, never a 500")
    status, body = demo.call("POST", "/api/v2/hooks/Stop", b'{"final_output": 42}')
    print(f"   {status} {body}")
    demo.expect("malformed context", status, 400)

    if demo.failures:
        print("\nDEMO FAILED:\n  " + "\n  ".join(demo.failures))
        return 1
    print("\nAll decisions as expected.")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: client.py BASE_URL", file=sys.stderr)
        return 2
    return run(Demo(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
