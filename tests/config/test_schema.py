"""`judge config schema` covers both config forms; every example config in the repository
(examples/, evals/ and the YAML snippets of the docs) validates against it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from judge.cli import main
from judge.config import BARE_KEYS, RESOURCE_KEYS, config_from_data, config_json_schema

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", REPO / "prompts" / "README.md", REPO / "evals" / "README.md"]
DOCS += sorted((REPO / "docs").glob("*.md"))
FENCE = re.compile(r"^```(?:ya?ml|json)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def is_config(data: Any) -> bool:
    """A judge config, not a decision JSON or Claude Code's settings (entries with nested hooks)."""
    if not isinstance(data, dict) or not {"hooks", "spec", "kind"} & set(data):
        return False
    if not set(data) <= BARE_KEYS | RESOURCE_KEYS:
        return False
    events = data.get("hooks") or {}
    entries = (
        [e for v in events.values() if isinstance(v, list) for e in v] if isinstance(events, dict) else []
    )
    return not any(isinstance(e, dict) and "hooks" in e for e in entries)


def example_files() -> list[Path]:
    found = []
    for folder in ("examples", "evals"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in (".yaml", ".yml", ".json") and is_config(yaml.safe_load(path.read_text())):
                found.append(path)
    return found


def doc_snippets() -> list[tuple[str, Any]]:
    found = []
    for doc in DOCS:
        for number, match in enumerate(FENCE.finditer(doc.read_text(encoding="utf-8"))):
            try:
                data = yaml.safe_load(match.group(1))
            except yaml.YAMLError:
                continue
            if is_config(data):
                found.append((f"{doc.relative_to(REPO)}#{number}", data))
    return found


EXAMPLES = example_files()
SNIPPETS = doc_snippets()


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    schema = config_json_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def test_schema_declares_its_dialect_and_both_forms(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert {ref["$ref"] for ref in schema["anyOf"]} == {"#/$defs/BareDocument", "#/$defs/ResourceDocument"}


def test_the_repository_has_example_configs_and_doc_snippets() -> None:
    names = {p.relative_to(REPO).as_posix() for p in EXAMPLES}
    assert {"examples/agent_loop.yaml", "evals/smoke/agent.yaml"} <= names
    assert {"README.md#0", "prompts/README.md#0"} <= {name for name, _ in SNIPPETS}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.relative_to(REPO).as_posix() for p in EXAMPLES])
def test_example_config_matches_the_schema(path: Path, validator: jsonschema.protocols.Validator) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert [e.message for e in validator.iter_errors(data)] == []
    config_from_data(data)  # and the loader agrees


@pytest.mark.parametrize("snippet", SNIPPETS, ids=[s[0] for s in SNIPPETS])
def test_doc_snippet_matches_the_schema(
    snippet: tuple[str, Any], validator: jsonschema.protocols.Validator
) -> None:
    _, data = snippet
    assert [e.message for e in validator.iter_errors(data)] == []
    config_from_data(data)


def test_resource_document_matches_and_mistakes_do_not(validator: jsonschema.protocols.Validator) -> None:
    hook = {"type": "command", "matcher": "Bash", "command": "exit 0"}
    resource = {
        "api_version": "v1",
        "kind": "ExtendedAgent",
        "metadata": {"name": "a"},
        "spec": {"hooks": {"PreToolUse": [hook]}, "customAgents": {"r": {"hooks": {"Stop": []}}}},
    }
    assert validator.is_valid(resource)
    assert not validator.is_valid({**resource, "kind": "Agent"})
    assert not validator.is_valid({**resource, "hooks": {}})  # forms do not mix
    assert not validator.is_valid({"hooks": {"PreToolUse": [{**hook, "timeot": 3}]}})
    assert not validator.is_valid({"hooks": {"Stopp": []}})
    assert not validator.is_valid({"hooks": {"Stop": [{"prompt": "x", "maxRejections": 26}]}})


def test_prices_and_budgets_are_in_both_forms(validator: jsonschema.protocols.Validator) -> None:
    extras = {"prices": {"openai:gpt-4o": {"input": 2.5, "output": 10}}, "budgets": {"perDayUsd": 5}}
    bare = {"hooks": {}, **extras}
    assert validator.is_valid(bare)
    config_from_data(bare)
    assert validator.is_valid({"kind": "ExtendedAgent", "spec": {"hooks": {}}, **extras})
    assert not validator.is_valid({**bare, "budgets": {"perDay": 5}})
    assert not validator.is_valid({**bare, "prices": {"openai:gpt-4o": {"input": -1, "output": 1}}})
