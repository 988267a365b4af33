"""The public Python API: ``judge.__all__`` is pinned, every name resolves, and the docs and
examples import only from the public modules."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import judge

REPO = Path(__file__).resolve().parents[1]

#: The promise to Python users. Changing it is an API change: do it on purpose.
PUBLIC = {
    "ApiError",
    "AuditLog",
    "CascadeError",
    "Config",
    "ConfigError",
    "ContextError",
    "Decision",
    "Engine",
    "Gate",
    "Hook",
    "HookError",
    "HookOutcome",
    "JudgeError",
    "JudgementTrace",
    "LLMJudge",
    "PromptJudge",
    "PromptRequest",
    "PromptVerdict",
    "SessionFacts",
    "StateUnavailable",
    "StopGate",
    "StopVerdict",
    "Store",
    "SuiteError",
    "Usage",
    "UsageError",
    "__version__",
    "check_config",
    "config_from_data",
    "load_config",
    "open_store",
    "parse_context",
    "wrap_dispatcher",
}

#: Modules whose own ``__all__`` is public too (what docs and examples may import from).
PUBLIC_MODULES = (
    "judge",
    "judge.config",
    "judge.evaluation",
    "judge.integrations",
    "judge.testing",
    # the agent frameworks' adapters: public, each with its extra ([langchain], [openai-agents])
    "judge.integrations.langchain",
    "judge.integrations.openai_agents",
)


def test_the_public_names_are_pinned() -> None:
    assert set(judge.__all__) == PUBLIC
    assert len(judge.__all__) == len(set(judge.__all__))


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(judge, name) is not None
    assert name in dir(judge)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = judge.no_such_name  # type: ignore[attr-defined]


def test_the_exception_tree_is_rooted_in_judge_error() -> None:
    for name in (
        "ApiError",
        "CascadeError",
        "ConfigError",
        "ContextError",
        "HookError",
        "StateUnavailable",
        "SuiteError",
        "UsageError",
    ):
        assert issubclass(getattr(judge, name), judge.JudgeError)


def test_import_judge_loads_none_of_the_heavy_modules() -> None:
    code = (
        "import sys, judge; "
        "heavy = ('pydantic', 'jinja2', 'openai', 'anthropic', 'judge.hooks.engine'); "
        "heavy = [m for m in heavy if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("module", PUBLIC_MODULES[1:])
def test_the_public_subpackages_keep_an_all_that_resolves(module: str) -> None:
    mod = __import__(module, fromlist=["__all__"])
    assert mod.__all__
    for name in mod.__all__:
        assert getattr(mod, name) is not None, f"{module}.{name}"


IMPORT = re.compile(r"^\s*(?:from\s+(judge[\w.]*)\s+import|import\s+(judge[\w.]*))", re.MULTILINE)
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md"), *(REPO / "examples").rglob("*.py")])


@pytest.mark.parametrize("doc", DOCS, ids=[d.relative_to(REPO).as_posix() for d in DOCS])
def test_docs_and_examples_import_only_public_modules(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    used = {a or b for a, b in IMPORT.findall(text)}
    assert used <= set(PUBLIC_MODULES), sorted(used - set(PUBLIC_MODULES))
