"""Every exception a caller of judge may catch, in one tree::

    JudgeError                  errors judge raises on purpose
    ├── ConfigError             an invalid hook configuration (``problems``: located lines)
    ├── ContextError            a malformed hook context (the event payload)
    ├── HookError               a hook produced no decision (its ``failMode`` decides)
    │   └── CascadeError        every stage of a model cascade failed
    ├── StateUnavailable        the state store cannot be used (also an ``OSError``)
    ├── SuiteError              an eval suite cannot be used (``problems``: located lines)
    ├── UsageError              a bad flag or argument (the command line exits 2)
    └── ApiError                an HTTP request the service refuses (``status``: 4xx)

Everything else judge raises is a bug or the operating system's own error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.decision import CascadeStage


class JudgeError(Exception):
    """Base class for errors this package raises on purpose."""


class ConfigError(JudgeError):
    """The hook configuration is invalid; ``problems`` holds one located message each."""

    def __init__(self, problems: list[str], source: str | None = None) -> None:
        self.problems = problems
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(problems))


class ContextError(JudgeError):
    """The hook context (the event payload) is malformed."""


class HookError(JudgeError):
    """A hook failed to produce a decision (timeout, crash, bad output, provider failure).

    The engine turns it into the hook's ``failMode``. ``model`` names the model a prompt
    hook was judged by (or tried), so the decision reports it even on failure; ``usage``
    (a :class:`judge.decision.Usage`) is what the model calls cost when they were made and
    answered, but the answer could not be used (e.g. evidence that did not check out).
    """

    def __init__(self, message: str, model: str | None = None, usage: Any = None) -> None:
        super().__init__(message)
        self.model = model
        self.usage = usage


class StateUnavailable(JudgeError, OSError):
    """The state store (SQLite file or PostgreSQL database) cannot be opened or used.

    The service answers hook requests that needed it per the hooks' ``failMode``.
    """


class CascadeError(HookError):
    """Every stage of a cascade failed; ``stages`` says how."""

    def __init__(self, message: str, stages: list[CascadeStage], model: str | None = None) -> None:
        super().__init__(message, model)
        self.stages = stages


class ApiError(JudgeError):
    """An HTTP request the service refuses: answered as ``{"error": message, "problems":
    [...]}`` with ``status`` (4xx), never a 500."""

    def __init__(self, status: int, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.problems = problems


class SuiteError(JudgeError):
    """The suite (or its config or cases) cannot be used; ``problems`` holds located messages."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


class UsageError(JudgeError):
    """A flag or argument that cannot be used as given (the command exits 2, nothing spent)."""
