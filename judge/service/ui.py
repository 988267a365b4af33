"""``GET /ui``: a small live view of the gate, and the summary it shows.

The page (``judge/service/ui.html``) holds no data and needs no token; everything it shows comes
from ``GET /api/v2/ui/summary``, which needs the service's token like every other data
endpoint. The page asks for the token once (or takes it from a ``#token=...`` fragment,
which browsers never send to the server) and keeps it in the tab's ``sessionStorage``.
Every value is inserted as text, never as HTML: reasons come from agents and judges.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response


@cache
def page() -> str:
    """The page's HTML (package data)."""
    return resources.files("judge.service").joinpath("ui.html").read_text(encoding="utf-8")


async def ui_page(request: Request) -> Response:
    return HTMLResponse(page(), headers={"cache-control": "no-store", "x-frame-options": "DENY"})
