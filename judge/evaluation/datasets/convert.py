"""Converters from public datasets into eval suites (``judge datasets convert``).

``llmbar`` (e.g. ``natural.json``: a list of ``{"input", "output_1", "output_2", "label"}``
with ``label`` 1 or 2 naming the output that follows the instruction) → two Stop cases
per pair: the better output labelled ``allow``, the other ``block``, ``group`` = the
pair id; the instruction is the user's request in the transcript.

``tau-bench`` (e.g. ``gpt-4o-airline.json``: a list of ``{"task_id", "trial", "reward",
"traj": [chat messages], "info"}``) → one Stop case per trajectory: reward 1 → ``allow``,
otherwise ``block``; the transcript is the rendered message list (a file under
``transcripts/``); ``final_output`` is the agent's last message; ``group`` = the task.

Each conversion writes ``suite.yaml``, ``cases.jsonl`` (and ``transcripts/``) into the
output folder, plus a starting ``agent.yaml`` hook config when the folder has none
(an existing one — say, a tuned prompt — is kept).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from judge.files import NestedTooDeeply, RefusedFile, load_json, read_text
from judge.transcripts import render_json_document

#: Largest dataset file loaded (they are parsed whole).
MAX_DATASET_BYTES = 1 << 30

LLMBAR_AGENT = """\
# Hook config for the LLMBar suite: does the answer follow the user's instruction?
hooks:
  Stop:
    - type: prompt
      model: ReasoningFast
      timeout: 60
      prompt: |
        You are a strict reviewer. The agent was given an instruction (the user's request,
        at the start of the transcript in execution_summary) and produced the final answer
        in final_output. Decide whether the answer precisely follows the instruction: it
        does what was asked, honours every explicit constraint (format, length, content),
        and adds nothing the instruction rules out. Fluency alone is not enough.
        $ARGUMENTS
        Respond with {"ok": true} if it follows the instruction, otherwise
        {"ok": false, "reason": "<which part of the instruction it fails>"}.
"""

TAU_AGENT = """\
# Hook config for the tau-bench airline suite: did the agent really finish the user's task?
hooks:
  Stop:
    - type: prompt
      model: ReasoningFast
      timeout: 120
      prompt: |
        You audit an airline customer-service agent. The transcript (execution_summary)
        holds the airline policy, the conversation and every tool call with its result.
        Decide whether the agent completed what the user asked, correctly and within the
        policy: the right reservation/flight/passenger changes were made through the tools
        (not just promised), the user confirmed before any change, and nothing was done
        that the policy forbids. Use ReadFile and GrepSearch on the transcript.
        $ARGUMENTS
        Respond with {"ok": true} if the task was handled correctly, otherwise
        {"ok": false, "reason": "<what is wrong or missing>"}.
"""


class DatasetError(Exception):
    """The source file is missing or not in the expected shape."""


def _read(path: Path, what: str, limit: int | None = None) -> str:
    """The text of a regular file, or a :class:`DatasetError` saying why not."""
    try:
        return read_text(path, what) if limit is None else read_text(path, what, limit=limit)
    except FileNotFoundError:
        raise DatasetError(f"{path}: file not found") from None
    except RefusedFile as exc:
        raise DatasetError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from None


def _load_list(source: Path) -> list[Any]:
    text = _read(source, "dataset file", MAX_DATASET_BYTES)
    try:
        data = load_json(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{source}: malformed JSON at line {exc.lineno}: {exc.msg}") from None
    except NestedTooDeeply:
        raise DatasetError(f"{source}: the JSON is nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more digits than Python converts
        raise DatasetError(f"{source}: malformed JSON: {str(exc).split(';')[0]}") from None
    if not isinstance(data, list):
        raise DatasetError(f"{source}: expected a JSON list of items, got {type(data).__name__}")
    return data


def llmbar_cases(items: list[Any], source: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Two cases per LLMBar pair (see the module docstring)."""
    cases: list[dict[str, Any]] = []
    for index, item in enumerate(items[:limit] if limit is not None else items):
        where = f"{source}: item {index}"
        if not isinstance(item, dict):
            raise DatasetError(f"{where}: expected an object")
        for key in ("input", "output_1", "output_2"):
            if not isinstance(item.get(key), str):
                raise DatasetError(f"{where}: {key!r} must be a string")
        better = item.get("label")
        if better not in (1, 2):
            raise DatasetError(f"{where}: 'label' must be 1 or 2, got {better!r}")
        pair = f"llmbar-{index:04d}"
        for which in (1, 2):
            output = item[f"output_{which}"]
            transcript = "\n".join(
                render_json_document(
                    [{"role": "user", "content": item["input"]}, {"role": "assistant", "content": output}]
                )
            )
            cases.append(
                {
                    "id": f"{pair}-o{which}",
                    "context": {
                        "hook_event_name": "Stop",
                        "agent_name": "llmbar",
                        "current_turn": 1,
                        "final_output": output,
                    },
                    "transcript": transcript,
                    "label": "allow" if which == better else "block",
                    "group": pair,
                    "tags": ["llmbar", f"output_{which}"],
                }
            )
    return cases


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def tau_cases(items: list[Any], source: str, out: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """One case per τ-bench trajectory; transcripts are written to ``out/transcripts``.

    Every item is checked before anything is written, so a bad item leaves no partial output.
    """
    folder = out / "transcripts"
    cases: list[dict[str, Any]] = []
    transcripts: list[tuple[str, str]] = []
    used: set[str] = set()
    for index, item in enumerate(items[:limit] if limit is not None else items):
        where = f"{source}: item {index}"
        if not isinstance(item, dict):
            raise DatasetError(f"{where}: expected an object")
        traj = item.get("traj")
        if not isinstance(traj, list) or not all(isinstance(m, dict) for m in traj):
            raise DatasetError(f"{where}: 'traj' must be a list of messages")
        reward = item.get("reward")
        if isinstance(reward, bool) or not isinstance(reward, (int, float)):
            raise DatasetError(f"{where}: 'reward' must be a number, got {reward!r}")
        task = item.get("task_id", index)
        trial = item.get("trial", 0)
        case_id = f"tau-{task}-t{trial}"
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", case_id)  # ids come from the data
        file_name, n = stem + ".txt", 1
        while file_name in used:  # "a/b" and "a_b" must not share a transcript
            n += 1
            file_name = f"{stem}-{n}.txt"
        used.add(file_name)
        final = ""
        for message in reversed(traj):
            if message.get("role") == "assistant" and _text(message.get("content")).strip():
                final = _text(message.get("content"))
                break
        transcripts.append((file_name, "\n".join(render_json_document(traj)) + "\n"))
        cases.append(
            {
                "id": case_id,
                "context": {
                    "hook_event_name": "Stop",
                    "agent_name": "tau-airline",
                    "current_turn": sum(1 for m in traj if m.get("role") == "assistant"),
                    "final_output": final,
                },
                "transcript_path": f"transcripts/{file_name}",
                "label": "allow" if reward >= 1.0 else "block",
                "group": f"task-{task}",
                "tags": ["tau-bench", "airline"],
            }
        )
    if cases:
        folder.mkdir(parents=True, exist_ok=True)
    for file_name, text in transcripts:
        (folder / file_name).write_text(text, encoding="utf-8")
    return cases


def write_suite(
    out: Path, name: str, cases: list[dict[str, Any]], agent_yaml: str, event: str = "Stop"
) -> Path:
    """Write suite.yaml and cases.jsonl (and agent.yaml when missing); return the suite path."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case, ensure_ascii=False) + "\n")
    agent = out / "agent.yaml"
    if not agent.exists():
        agent.write_text(agent_yaml, encoding="utf-8")
    suite = out / "suite.yaml"
    fields = {"name": name, "config": "agent.yaml", "event": event, "cases": "cases.jsonl", "repeats": 1}
    # the name comes from the source file's name: dumped, so any characters stay one string
    suite.write_text(yaml.safe_dump(fields, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return suite


def convert(kind: str, source: str | Path, out: str | Path, limit: int | None = None) -> Path:
    """Convert ``source`` into a suite in ``out``; return the suite file. Raises DatasetError."""
    src = Path(source)
    dest = Path(out)
    if limit is not None and limit < 1:
        raise DatasetError(f"--limit must be at least 1, got {limit}")
    items = _load_list(src)
    converters: dict[str, Callable[[], tuple[str, list[dict[str, Any]], str]]] = {
        "llmbar": lambda: ("llmbar-" + src.stem, llmbar_cases(items, str(src), limit), LLMBAR_AGENT),
        "tau-bench": lambda: ("tau-bench-" + src.stem, tau_cases(items, str(src), dest, limit), TAU_AGENT),
    }
    if kind not in converters:
        raise DatasetError(f"unknown dataset kind {kind!r} (expected one of {', '.join(converters)})")
    name, cases, agent_yaml = converters[kind]()
    if not cases:
        raise DatasetError(f"{src}: no items to convert")
    return write_suite(dest, name, cases, agent_yaml)


def convert_shadow(
    source: str | Path, out: str | Path, config: str | None, event: str, limit: int | None
) -> Path:
    """A suite from a shadow log, judged with a copy of ``config``. Raises DatasetError."""
    from judge.evaluation.datasets.shadow import ShadowLogError, shadow_cases

    if not config:
        raise DatasetError("shadow: --config CONFIG is needed (the hooks the suite judges with)")
    agent_yaml = _read(Path(config), "config file")
    try:
        cases = shadow_cases(Path(source), event, limit)
    except ShadowLogError as exc:
        raise DatasetError(str(exc)) from None
    return write_suite(Path(out), f"shadow-{event}", cases, agent_yaml, event)
