"""Logging of the HTTP service: one line per record on stderr, rate limited.

A flood of bad or slow clients must not fill the disk: every logger of the service
(requests, service errors, uvicorn, asyncio) passes through a :class:`RateLimit` — a
token bucket per kind of message. Past the burst, lines are dropped and counted; the
next line let through says how many were dropped since the previous one (request lines,
which are JSON, get a ``"droppedBefore": N`` field).
"""

from __future__ import annotations

import logging
import sys
import threading
import time

access_log = logging.getLogger("judge.server.access")
error_log = logging.getLogger("judge.server")

#: Request lines: a burst of 2000, then 200 per second (about 2.5 MB a minute at most).
ACCESS_RATE = (200.0, 2000.0)
#: Other messages, per message template: a burst of 20, then one per second.
MESSAGE_RATE = (1.0, 20.0)


class RateLimit(logging.Filter):
    """A token bucket per key: ``rate`` records per second after a burst of ``burst``.

    ``per_message`` keys the buckets by message template (so one noisy warning does not
    hide a different error); otherwise one bucket serves the whole logger.
    """

    def __init__(self, rate: float, burst: float, per_message: bool = True) -> None:
        super().__init__()
        self.rate = rate
        self.burst = burst
        self.per_message = per_message
        self._buckets: dict[str, tuple[float, float, int]] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = f"{record.name}|{record.msg}" if self.per_message else record.name
        now = time.monotonic()
        with self._lock:
            tokens, last, dropped = self._buckets.get(key, (self.burst, now, 0))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now, dropped + 1)
                return False
            if len(self._buckets) > 1000:
                self._buckets.clear()
            self._buckets[key] = (tokens - 1.0, now, 0)
        if dropped:
            text = record.getMessage()
            if text.startswith("{") and text.endswith("}"):  # a JSON request line stays JSON
                record.msg = f'{text[:-1]}, "droppedBefore": {dropped}}}'
            else:
                record.msg = f"{text} [{dropped} similar log lines dropped before this one]"
            record.args = None
        return True


def _limit(logger: logging.Logger, limit: RateLimit) -> None:
    logger.filters = [f for f in logger.filters if not isinstance(f, RateLimit)]
    logger.addFilter(limit)


def limit_log_rates() -> None:
    """Rate-limit every logger the service writes to (call again after uvicorn sets up its own)."""
    _limit(access_log, RateLimit(*ACCESS_RATE, per_message=False))
    for name in ("judge.server", "uvicorn.error", "uvicorn", "asyncio"):
        _limit(logging.getLogger(name), RateLimit(*MESSAGE_RATE))


def configure_logging() -> None:
    """Request log lines (already JSON) and errors go to stderr, one per line, rate limited."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    access_log.handlers = [handler]
    access_log.setLevel(logging.INFO)
    access_log.propagate = False
    error_handler = logging.StreamHandler(sys.stderr)
    error_handler.setFormatter(logging.Formatter("judge serve: %(levelname)s %(message)s"))
    error_log.handlers = [error_handler]
    error_log.setLevel(logging.INFO)
    error_log.propagate = False
    limit_log_rates()
