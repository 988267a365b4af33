"""What went wrong on the way to a provider, in words a user can act on.

The SDKs report every transport failure as one "connection error" (the ``openai`` SDK
even reports a refused connection as "Request timed out"). The cause chain under it
says what happened; :func:`transport_failure` reads it:

* connection refused / DNS failure → :class:`ConnectionFailure` (retried a few times,
  briefly: a server restarting comes back within a second or two, a wrong address
  never does);
* TLS failure (bad certificate, plain HTTP on an ``https`` URL) →
  :class:`~judge.errors.HookError` (not retried: it does not fix itself);
* an answer over the size cap (:class:`ResponseTooLarge`) → that error (not retried);
* anything else → a transient "connection error" (retried within the hook timeout).

Every message names the provider, the model and the base URL.
"""

from __future__ import annotations

import socket
import ssl
from urllib.parse import urlsplit

from judge.errors import HookError


class TransientError(Exception):
    """A failure worth retrying; ``retry_after`` is the server's hint in seconds."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ConnectionFailure(TransientError):
    """The server could not be reached (refused, unknown host): retried only briefly."""


class ResponseTooLarge(HookError):
    """A provider's answer over :data:`judge.llm.providers.clients.MAX_RESPONSE_BYTES`:
    reading stopped there (not retried: a server sending that much will again)."""


def _causes(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(seen) < 16 and all(current is not s for s in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _host(url: str) -> str:
    try:
        return urlsplit(url).hostname or url
    except ValueError:
        return url


def transport_failure(exc: BaseException, label: str, url: str) -> Exception:
    """The error to raise for an SDK connection or timeout error ``exc`` (see module doc)."""
    causes = _causes(exc)
    for cause in causes:
        if isinstance(cause, ResponseTooLarge):
            return HookError(f"{label} at {url}: {cause}")
    for cause in reversed(causes):  # the innermost: wrappers say less
        if isinstance(cause, ssl.SSLError):
            detail = getattr(cause, "reason", None) or cause.strerror or cause.__class__.__name__
            if isinstance(cause, ssl.SSLCertVerificationError) and cause.verify_message:
                detail = f"certificate verify failed: {cause.verify_message}"
            return HookError(f"{label}: TLS failure with {url}: {detail}")
    for cause in causes:
        if isinstance(cause, socket.gaierror):
            why = cause.strerror or str(cause)
            return ConnectionFailure(f"{label}: DNS lookup failed for {_host(url)} ({url}): {why}")
    for cause in causes:
        if isinstance(cause, ConnectionRefusedError):
            return ConnectionFailure(f"{label}: connection refused by {url}")
    if any(isinstance(c, TimeoutError) or "Timeout" in type(c).__name__ for c in causes):
        return TransientError(f"{label}: no answer from {url} in time (request timed out)")
    last = causes[-1]
    detail = str(last) or type(last).__name__
    return TransientError(f"{label}: connection error with {url}: {detail[:200]}")
