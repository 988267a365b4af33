"""Text made safe to show: URLs without their secrets, text without hidden reordering.

A base URL or a database URL may carry a password (``https://user:pw@gateway/v1``,
``postgresql://u:pw@host/db``) or a key in its query (``?password=...``, ``?api-key=...``).
Whatever is shown to an agent, written to a log or printed keeps the rest of the URL, so
the reader still knows where the request went (:func:`redact_url`).

Case ids, reasons and answers come from agents and judges; Unicode's bidirectional
controls in them (U+202E RIGHT-TO-LEFT OVERRIDE and its kin) would make a report or a
terminal show text in an order other than the one it is stored in - a reason that reads
as an approval, a case id that looks like another. :func:`visible_controls` writes them
as ``\\u202e``: visible text in HTML and XML, and the same character again once a JSON
line is parsed.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

#: Unicode's bidirectional formatting characters (embeddings, overrides, isolates, marks).
BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible_controls(text: str) -> str:
    """``text`` with every bidirectional control written as its ``\\uXXXX`` escape."""
    return BIDI_CONTROLS.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


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


def html_text(value: object) -> str:
    """``value`` as HTML text: escaped (quotes too), bidirectional controls made visible
    (:func:`visible_controls`); ``None`` as the empty string."""
    import html

    return html.escape(visible_controls("" if value is None else str(value)), quote=True)
