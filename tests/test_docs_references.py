"""The docs cite only documents that are in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("docs", "prompts", "evals", "bench", "examples")
#: Virtual environments the benches create (bench/.venv-inspect) are not the repository's.
DOCS = sorted(
    [
        REPO / "README.md",
        *(
            p
            for folder in FOLDERS
            for p in (REPO / folder).rglob("*.md")
            if not any(part.startswith(".venv") for part in p.relative_to(REPO).parts)
        ),
    ]
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#+\s+(.*)$", re.MULTILINE)
#: Documents that exist outside this repository only; citing them leaves readers stranded.
OUTSIDE = re.compile(r"\b(SPEC|INTERFACES)(\.md)?\s*§")


def anchors(path: Path) -> set[str]:
    found = set()
    for title in HEADING.findall(path.read_text(encoding="utf-8")):
        slug = re.sub(r"[^\w\s-]", "", title.strip().lower().replace("`", ""))
        found.add(re.sub(r"\s", "-", slug))
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[d.relative_to(REPO).as_posix() for d in DOCS])
def test_links_and_citations_resolve(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    problems = [f"cites {m.group(0)!r}" for m in OUTSIDE.finditer(text)]
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        file_part, _, anchor = target.partition("#")
        path = (doc.parent / file_part).resolve() if file_part else doc
        if not path.exists():
            problems.append(f"links to missing {target}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            problems.append(f"links to missing heading {target}")
    assert problems == []


SOURCES = sorted((REPO / "judge").rglob("*.py"))
#: Sphinx-style cross references in docstrings: :mod:`judge.x`, :class:`~judge.x.Y`, ...
ROLE = re.compile(r":(mod|class|func|meth|data|attr|exc):`~?(judge(?:\.\w+)+)`")


def _resolves(target: str) -> bool:
    import importlib

    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(obj, name):
                return False
            obj = getattr(obj, name)
        return True
    return False


@pytest.mark.parametrize("source", SOURCES, ids=[s.relative_to(REPO).as_posix() for s in SOURCES])
def test_docstrings_cite_only_what_exists(source: Path) -> None:
    text = source.read_text(encoding="utf-8")
    problems = [f"cites {m.group(0)!r}" for m in OUTSIDE.finditer(text)]
    problems += [f"{m.group(0)} does not resolve" for m in ROLE.finditer(text) if not _resolves(m.group(2))]
    assert problems == []
