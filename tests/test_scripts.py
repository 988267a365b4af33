"""The README's first commands and the scripts behind them: `scripts/test.sh` (the test
command) sets a fresh clone up first, once, with the development tools and the system
tools the tests use, saying what it installs and why; the demo's set-up installs judge
alone; the commands the README and the demo print work as typed in a fresh shell."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

STUB_PYTHON = """#!/usr/bin/env bash
echo "python $*" >> "$(dirname "$0")/../../calls.log"
"""
STUB_SETUP = """#!/usr/bin/env bash
set -e
cd "$(dirname "$0")/.."
echo "setup $*" >> calls.log
mkdir -p .venv/bin
cp stub_python .venv/bin/python
chmod +x .venv/bin/python
"""


def test_test_script_sets_up_a_fresh_clone_first(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "test.sh", tmp_path / "scripts" / "test.sh")
    (tmp_path / "scripts" / "setup.sh").write_text(STUB_SETUP)
    (tmp_path / "stub_python").write_text(STUB_PYTHON)
    env = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    run = [shutil.which("bash") or "bash", str(tmp_path / "scripts" / "test.sh")]
    assert subprocess.run(run, env=env, capture_output=True, text=True, timeout=60).returncode == 0
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls[0] == "setup --dev"  # the development tools and the tests' system tools
    assert any(c.startswith("python -m pytest") for c in calls)
    # set up once: the next run goes straight to the checks
    (tmp_path / "calls.log").unlink()
    assert subprocess.run(run, env=env, capture_output=True, text=True, timeout=60).returncode == 0
    assert "setup --dev" not in (tmp_path / "calls.log").read_text().splitlines()


# -- the set-up: the demo's installs judge alone; the tests' says what and why ------------

LOGGING_STUB = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "{log}"
{body}
"""
#: Real tools the scripts use, linked into a PATH of stubs (nothing else is found there).
REAL_TOOLS = (
    "bash",
    "dirname",
    "ls",
    "tail",
    "sed",
    "mktemp",
    "rm",
    "cat",
    "basename",
    "mkdir",
    "cp",
    "chmod",
)


def _stub(folder: Path, name: str, log: Path, body: str = "exit 0") -> None:
    path = folder / name
    path.write_text(LOGGING_STUB.format(log=log, body=body))
    path.chmod(0o755)


def _sandbox(
    tmp_path: Path, *, root: bool = True, apt_fails: str | None = None
) -> tuple[Path, dict[str, str]]:
    """A copy of scripts/ with stub python3, apt-get, npm and id on a PATH of their own."""
    (tmp_path / "scripts").mkdir()
    for script in ("setup.sh", "test-tools.sh"):
        shutil.copy(REPO / "scripts" / script, tmp_path / "scripts" / script)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "calls.log"
    for tool in REAL_TOOLS:
        found = shutil.which(tool)
        assert found is not None
        (stubs / tool).symlink_to(found)
    venv_python = 'mkdir -p .venv/bin && cp "$0.venv" .venv/bin/python && chmod +x .venv/bin/python'
    _stub(stubs, "python3", log, venv_python)
    (stubs / "python3.venv").write_text(
        LOGGING_STUB.format(log=log, body='[ "$3" = show ] && exit 1; exit 0').replace(
            '$(basename "$0")', "venv-python"
        )
    )
    failing = f'echo "{apt_fails}" >&2; exit 100' if apt_fails else "exit 0"
    _stub(stubs, "apt-get", log, f'[ "$1" = install ] && {{ {failing}; }}; exit 0')
    _stub(stubs, "npm", log)
    _stub(stubs, "id", log, f"echo {0 if root else 1000}")
    env = {"PATH": str(stubs), "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path)}
    return log, env


def _calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_the_demos_set_up_installs_judge_alone(tmp_path: Path) -> None:
    log, env = _sandbox(tmp_path)
    done = subprocess.run(
        ["bash", "scripts/setup.sh"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    calls = _calls(log)
    assert "venv-python -m pip install -q -e ." in calls
    assert not [c for c in calls if "[dev]" in c or c.split()[0] in ("apt-get", "npm", "id")]
    assert not [c for c in calls if "claude_cli" in c]
    demo = (REPO / "scripts" / "demo.sh").read_text()
    assert "bash scripts/setup.sh\n" in demo and "--dev" not in demo


def test_the_tests_set_up_says_what_it_installs_why_and_why_it_could_not(tmp_path: Path) -> None:
    log, env = _sandbox(tmp_path, apt_fails="E: Unable to locate package chromium")
    done = subprocess.run(
        ["bash", "scripts/setup.sh", "--dev"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    calls = _calls(log)
    assert "venv-python -m pip install -q -e .[dev]" in calls
    assert "apt-get install -y -qq chromium" in calls
    assert "venv-python tests/realclient/claude_cli.py" in calls
    lines = done.stderr.splitlines()
    at = lines.index(
        "test tools: installing Chromium (apt-get install chromium) for the live view's browser test "
        "(tests/service/test_ui.py)"
    )
    assert lines[at + 1 : at + 3] == [
        "test tools: could not install chromium, so the live view's browser test "
        "(tests/service/test_ui.py) will be skipped:",
        "    E: Unable to locate package chromium",
    ]


def test_the_tests_set_up_says_when_it_needs_root(tmp_path: Path) -> None:
    log, env = _sandbox(tmp_path, root=False)
    done = subprocess.run(
        ["bash", "scripts/test-tools.sh"],
        cwd=tmp_path,
        env={**env, "PYTHON": "true"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert not [c for c in _calls(log) if c.startswith("apt-get")]
    assert (
        "test tools: Chromium is not installed; installing it needs root (sudo apt-get install chromium): "
        "the live view's browser test (tests/service/test_ui.py) will be skipped"
    ) in done.stderr.splitlines()


def test_ci_installs_everything_then_runs_the_readmes_test_command() -> None:
    readme = (REPO / "README.md").read_text()
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    test_command = next(line.split("#")[0].strip() for line in first_block.splitlines() if "test" in line)
    ci = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and line[0] not in "#"]
    assert ci[-2:] == ["bash scripts/setup.sh --dev", test_command]


# -- what the README and the demo tell a newcomer to type ---------------------------------


def _fresh_shell(cwd: Path, home: Path, script: str) -> subprocess.CompletedProcess[str]:
    """``script`` in a new bash, with a fresh machine's environment: no venv on PATH."""
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_readmes_first_commands_work_as_typed_in_a_fresh_shell(tmp_path: Path) -> None:
    """After the demo (which made .venv), the README's next lines give a `judge` to run:
    typed into a new shell, `judge init my-agent` works (not `judge: command not found`)."""
    readme = (REPO / "README.md").read_text()
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line.split("  #")[0].strip() for line in first_block.splitlines()]
    assert lines[:2] == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    clone = tmp_path / "clone"
    clone.mkdir()
    (clone / ".venv").symlink_to(Path(sys.prefix))  # what the demo set up
    done = _fresh_shell(clone, tmp_path / "home", "\n".join(lines[2:]))
    assert done.returncode == 0, done.stderr
    assert (clone / "my-agent" / "judge.yaml").is_file()


def test_the_demos_path_command_works_where_local_bin_does_not_exist(tmp_path: Path) -> None:
    script = (REPO / "scripts" / "demo.sh").read_text()
    line = next(text for text in script.splitlines() if "~/.local/bin/judge" in text)
    home = tmp_path / "home"
    home.mkdir()
    root = tmp_path / "clone"
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "judge").symlink_to(Path(sys.prefix) / "bin" / "judge")
    done = _fresh_shell(tmp_path, home, f'ROOT="{root}"\n{line.split("  #")[0]}')
    assert done.returncode == 0, done.stderr
    version = subprocess.run(
        [str(home / ".local" / "bin" / "judge"), "--version"], capture_output=True, text=True, timeout=60
    )
    assert version.stdout.startswith("judge ")


def test_the_dataset_conversion_says_where_to_download_what_is_missing(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", str(REPO / "evals" / "convert.sh"), str(tmp_path / "datasets")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    llmbar = "https://raw.githubusercontent.com/princeton-nlp/LLMBar/main/Dataset/LLMBar/Natural/dataset.json"
    tau = "https://raw.githubusercontent.com/sierra-research/tau-bench/main/historical_trajectories/gpt-4o-airline.json"
    assert f'curl -fsSL -o "{tmp_path}/datasets/llmbar/natural.json" {llmbar}' in done.stderr
    assert f'curl -fsSL -o "{tmp_path}/datasets/tau-bench/gpt-4o-airline.json" {tau}' in done.stderr
    guide = (REPO / "evals" / "README.md").read_text()
    assert llmbar in guide and tau in guide
