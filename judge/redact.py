"""URLs without their secrets, for messages and logs.

A base URL or a database URL may carry a password (``https://user:pw@gateway/v1``,
``postgresql://u:pw@host/db``) or a key in its query (``?password=...``, ``?api-key=...``).
Whatever is shown to an agent, written to a log or printed keeps the rest of the URL, so
the reader still knows where the request went.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

_SECRET_PARAMS = re.compile(r"(?i)((?:password|passwd|api[-_]?key|key|token|secret|sig)=)[^&#\s]*")


def redact_url(url: str) -> str:
    """``url`` with its password and secret query values replaced by ``***``."""
    text = _SECRET_PARAMS.sub(r"\1***", url)
    try:
        parts = urlsplit(text)
        user, at, host = parts.netloc.rpartition("@")
        if parts.password is not None:
            text = text.replace(parts.netloc, f"{user.split(':', 1)[0]}:***@{host}", 1)
        elif at and parts.scheme in ("http", "https"):  # a gateway's token given as the user name
            text = text.replace(parts.netloc, f"***@{host}", 1)
    except ValueError:
        pass
    return text
