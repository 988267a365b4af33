"""The distribution has a name nobody else owns on PyPI (``judge`` is an unrelated project:
``pip install 'judge[postgres]'`` installed it and warned that it has no such extra), and
every install line the docs and the command line give uses that name or the clone path.
The import package and the command stay ``judge``."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DISTRIBUTION = "judge-hooks"
#: ``pip install ...`` as written in docs, scripts and messages (up to a comment or quote end).
PIP_INSTALL = re.compile(r"pip install ((?:-[\w-]+ )*)([^\s`\"#)]+(?: [^\s`\"#)-][^\s`\"#)]*)*)")


def _texts() -> dict[str, str]:
    files = [REPO / "README.md", *REPO.glob("docs/*.md"), *REPO.glob("evals/**/*.md")]
    files += [*REPO.glob("judge/**/*.py"), *REPO.glob("scripts/*.sh"), REPO / ".ci" / "run"]
    return {str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in files if p.is_file()}


def test_the_distribution_is_named_judge_hooks_and_installs_the_judge_command() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION
    assert project["scripts"] == {"judge": "judge.cli:main"}
    assert "postgres" in project["optional-dependencies"]


def test_every_install_line_names_the_distribution_or_a_path() -> None:
    wrong = []
    for name, text in _texts().items():
        for match in PIP_INSTALL.finditer(text):
            for target in match.group(2).split():
                target = target.strip("'\"")
                if re.fullmatch(r"judge(\[[\w,]+\])?", target):
                    wrong.append(f"{name}: {match.group(0)}")
    assert wrong == []


def test_the_postgres_hint_names_an_install_that_works() -> None:
    text = (REPO / "judge" / "state" / "postgres.py").read_text(encoding="utf-8")
    assert f"pip install '{DISTRIBUTION}[postgres]'" in text
    assert "pip install -e '.[postgres]'" in text
