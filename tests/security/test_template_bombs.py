"""Template size and time bombs: whatever a hook's prompt template asks for, a render stops
within its limits of time, output, value size and memory, and a service keeps answering.

Each payload runs for real: renders in a child process with a 2 GiB address-space
ceiling (a bomb that got through would die there of MemoryError, or hang until the
child's timeout), `judge validate` as a process, and `judge serve` with a custom agent
registered over HTTP.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.security.serve import LimitedService
from tests.service.test_service import REPO

pytestmark = pytest.mark.timeout(300)

#: Payloads and the limit each must run into.
BOMBS = {
    "nested list repetition": ("{{ [[0] * 1000000] * 1000000 }}", "'*': the result would be longer"),
    "list of a list repeated, printed": (
        "{% set row = [0] * 1000 %}{{ [row, row, row, row] * 250 }}",
        "'*': the result would be longer",
    ),
    "zfill": ("{{ 'x'.zfill(999999999) | length }}", "zfill: the result would be longer"),
    "ljust": ("{{ 'x'.ljust(999999999) }}", "ljust: the result would be longer"),
    "center method": ("{{ 'x'.center(999999999) }}", "center: the result would be longer"),
    "bytes center": ("{{ 'x'.encode().center(999999999) }}", "center: the result would be longer"),
    "expandtabs": ("{{ ('\\t' * 1000).expandtabs(999999) }}", "expandtabs: the result would be longer"),
    "translate": (
        "{{ ('a' * 99999).translate({97: 'b' * 99999}) }}",
        "translate: the result would be longer",
    ),
    "str.join": ("{{ ('x' * 99999).join(['a'] * 99999) }}", "join: the result would be longer"),
    "replace method": (
        "{{ ('x' * 99999).replace('x', 'y' * 99999) }}",
        "replace: the result would be longer",
    ),
    "star width": ("{{ '%*s' % (999999999, 'x') }}", "'%': the result would be longer"),
    "precision": ("{{ '%.999999999f' % 1 }}", "'%': the result would be longer"),
    "nested format width": ("{{ '{:{}}'.format('x', 999999999) }}", "format: the result would be longer"),
    "format width": ("{{ '{:>999999999}'.format('x') }}", "format: the result would be longer"),
    "tojson indent": ("{{ [[[[[[0]]]]]] | tojson(indent=999999) }}", "tojson: the result would be longer"),
    "batch fill": ("{{ [0] | batch(999999999, 0) | list }}", "batch: the result would be longer"),
    "slice": ("{{ [0] | slice(999999999) | list }}", "slice: the result would be longer"),
    "wordwrap": (
        "{{ ('x ' * 99999) | wordwrap(1, true, 'y' * 99999) }}",
        "wordwrap: the result would be longer",
    ),
    "urlize": ("{{ ('a.co ' * 99999) | urlize(target='t' * 99999) }}", "urlize: the result would be longer"),
    "literal doubling": (
        "{% set ns = namespace(x=[0]) %}{% for i in range(64) %}{% set ns.x = [ns.x, ns.x] %}"
        "{% endfor %}{{ ns.x }}",
        "a literal: the result would be longer",
    ),
    "macro varargs doubling": (
        "{% macro m(n) %}{% if n %}{{ m(n - 1, varargs, varargs) }}{% endif %}{% endmacro %}{{ m(90) }}",
        "the arguments of m: the result would be longer",
    ),
    "dict() doubling": (
        "{% set ns = namespace(d={}) %}{% for i in range(64) %}{% set ns.d = dict(a=ns.d, b=ns.d) %}"
        "{% endfor %}{{ ns.d == ns.d }}",
        "the result would be longer",
    ),
    "cycler doubling": (
        "{% set ns = namespace(c=cycler(0)) %}{% for i in range(64) %}"
        "{% set ns.c = cycler(ns.c.items, ns.c.items) %}{% endfor %}",
        "the result would be longer",
    ),
    "namespace chain printed": (
        "{% set top = namespace(cur=0) %}{% for i in range(64) %}{% set n = namespace() %}"
        "{% set n.a = top.cur %}{% set n.b = top.cur %}{% set top.cur = n %}{% endfor %}{{ top.cur }}",
        "would print as more than",
    ),
    "namespace chain through a filter": (
        "{% set top = namespace(cur=0) %}{% for i in range(64) %}{% set n = namespace() %}"
        "{% set n.a = top.cur %}{% set n.b = top.cur %}{% set top.cur = n %}{% endfor %}"
        "{{ top.cur | upper }}",
        "upper: the result would be longer",
    ),
    "list.extend doubling": (
        "{% set l = [0] %}{% for i in range(64) %}{{ l.extend(l) or '' }}{% endfor %}",
        "extend: the result would be longer",
    ),
    "dict.fromkeys": ("{{ {}.fromkeys(range(99999), 'x' * 99999) }}", "fromkeys: the result would be longer"),
    "integer squaring": (
        "{% set ns = namespace(n=3) %}{% for i in range(64) %}{% set ns.n = ns.n * ns.n %}{% endfor %}",
        "'*': the result would have more than",
    ),
    "to_bytes": ("{{ (1).to_bytes(999999999, 'big') }}", "to_bytes: the result would be longer"),
    "lipsum": ("{{ lipsum(999999, max=999999) }}", "lipsum: the result would be longer"),
    "output in a loop": (
        "{% for i in range(99999) %}{{ 'x' * 999999 }}{% endfor %}",
        "the template wrote more than",
    ),
    "output in a macro body": (
        "{% macro m() %}{% for i in range(99999) %}{{ 'x' * 999999 }}{% endfor %}{% endmacro %}"
        "{{ m() | length }}",
        "the template wrote more than",
    ),
    "template text in a loop": (
        "{% for i in range(99999) %}" + "x" * 999 + "{% endfor %}",
        "wrote more than",
    ),
    "building in a loop": (
        "{% for i in range(99999) %}{% set x = ('x' * 999999) | upper %}{% endfor %}",
        "built more than",
    ),
    "nested loops over long strings": (
        "{% for a in 'x' * 999999 %}{% for b in 'x' * 999999 %}{% endfor %}{% endfor %}",
        "took longer than",
    ),
}

_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    from judge.errors import HookError
    from judge.llm.prompts import render_prompt
    results = {}
    for name, template in json.loads(sys.stdin.read()).items():
        began = time.monotonic()
        try:
            render_prompt(template, {"hook_event_name": "Stop", "final_output": "done"}, arguments="")
            outcome = "rendered"
        except HookError as exc:
            outcome = str(exc)
        except BaseException as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        results[name] = [outcome, time.monotonic() - began]
    results["peak_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(results))
    """
)


def test_every_template_bomb_is_a_template_error_in_bounded_memory() -> None:
    templates = {name: template for name, (template, _) in BOMBS.items()}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps(templates),
        capture_output=True,
        text=True,
        timeout=240,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    for name, (_, problem) in BOMBS.items():
        outcome, seconds = results[name]
        assert outcome.startswith("prompt template error") and problem in outcome, (name, outcome)
        # (a step past a limit is refused before it runs; the time limit is 5 s)
        assert seconds < 30, (name, seconds)
    assert results["peak_kb"] < 1_500_000, results["peak_kb"]


def test_judge_validate_reports_each_bomb_without_hanging(tmp_path: Path) -> None:
    chosen = ["nested list repetition", "zfill", "nested loops over long strings", "macro varargs doubling"]
    hook = "    - type: prompt\n      model: fake:allow\n      prompt: {}\n"
    hooks = "".join(hook.format(json.dumps(BOMBS[name][0] + " $ARGUMENTS")) for name in chosen)
    config = tmp_path / "judge.yaml"
    config.write_text("hooks:\n  Stop:\n" + hooks)
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "validate", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        preexec_fn=_heap_ceiling,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    for index, name in enumerate(chosen):
        assert f"hooks.Stop[{index}].prompt: line 1: " in out, out
        assert BOMBS[name][1] in out, (name, out)


def _heap_ceiling() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


TOKEN = "t" * 32


def _service(tmp_path: Path) -> LimitedService:
    return LimitedService(
        tmp_path, ["--data-dir", str(tmp_path / "d")], env_extra={"JUDGE_API_TOKEN": TOKEN}, memory=4 << 30
    ).start()


def _agent(prompt: str, timeout: int = 30) -> dict[str, object]:
    hook = {
        "type": "prompt",
        "model": "fake:allow",
        "prompt": prompt,
        "timeout": timeout,
        "failMode": "block",
    }
    return {"name": "bomb", "properties": {"instructions": "x", "hooks": {"Stop": [hook]}}}


def _healthz_while(service: LimitedService, work: threading.Thread) -> list[float]:
    """How long each /healthz took while ``work`` ran (at least one)."""
    took: list[float] = []
    while work.is_alive() or not took:
        began = time.monotonic()
        status, _ = service.request("GET", "/healthz")
        assert status == 200
        took.append(time.monotonic() - began)
        time.sleep(0.05)
    return took


def test_a_custom_agent_with_a_bomb_is_refused_and_the_service_keeps_answering(tmp_path: Path) -> None:
    service = _service(tmp_path)
    try:
        for name in (
            "nested list repetition",
            "zfill",
            "macro varargs doubling",
            "nested loops over long strings",
        ):
            template, problem = BOMBS[name]
            answers: list[tuple[int, object]] = []
            put = threading.Thread(
                target=lambda t=template, answers=answers: answers.append(
                    service.request(
                        "PUT", "/api/v2/extendedAgent/agents/bomb", _agent(t + " $ARGUMENTS"), token=TOKEN
                    )
                )
            )
            put.start()
            took = _healthz_while(service, put)
            put.join()
            status, body = answers[0]
            assert status == 400 and problem in json.dumps(body), (name, status, body)
            assert max(took) < 5, (name, took)
    finally:
        service.stop()


def test_a_render_that_runs_to_the_hook_timeout_answers_then_and_leaves_the_service_free(
    tmp_path: Path,
) -> None:
    # Harmless on the sample answer `judge validate` and a PUT render, quadratic on a real one.
    loops = "{% for a in final_output %}{% for b in final_output %}{% endfor %}{% endfor %} $ARGUMENTS"
    service = _service(tmp_path)
    try:
        status, body = service.request(
            "PUT", "/api/v2/extendedAgent/agents/bomb", _agent(loops, timeout=2), token=TOKEN
        )
        assert status == 202, body
        answers: list[tuple[int, object]] = []
        stop = {"agent_name": "bomb", "final_output": "x" * 400_000}
        began = time.monotonic()
        run = threading.Thread(
            target=lambda: answers.append(service.request("POST", "/api/v2/hooks/Stop", stop, token=TOKEN))
        )
        run.start()
        took = _healthz_while(service, run)
        run.join()
        elapsed = time.monotonic() - began
        status, decision = answers[0]
        assert status == 200, decision
        assert decision["decision"] == "block", decision  # type: ignore[index]
        assert "timed out" in json.dumps(decision) or "took longer" in json.dumps(decision), decision
        assert elapsed < 15, elapsed  # a 2 s hook timeout (it used to run for minutes)
        assert max(took) < 5, took
    finally:
        service.stop()
