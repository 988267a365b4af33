"""Worker processes of ``judge serve --workers N`` exit when their master dies.

uvicorn starts the workers with multiprocessing's *spawn*; each worker keeps the read end
of a pipe whose write end only the master holds (``parent_process().sentinel``). When the
master dies, however it dies (``kill -9`` included), the pipe reads end-of-file: the
worker then shuts down gracefully (SIGTERM to itself: it stops accepting, finishes the
requests in flight) and is forced out after :data:`GRACE_SECONDS`. So no orphaned worker
keeps serving or holds the port.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from multiprocessing.connection import wait

#: Seconds a worker whose master died may take to finish its requests in flight.
GRACE_SECONDS = 30.0

log = logging.getLogger("judge.server")


def watch_master() -> bool:
    """In a worker process: start the thread that ends it when the master dies.
    False (nothing to watch) when this process was not started by a master."""
    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return False
    threading.Thread(
        target=_wait_for_master, args=(parent.sentinel,), name="judge-master-watch", daemon=True
    ).start()
    return True


def _wait_for_master(sentinel: int) -> None:
    wait([sentinel])
    log.warning("the master process died: worker %d shutting down", os.getpid())
    os.kill(os.getpid(), signal.SIGTERM)
    forced = threading.Timer(GRACE_SECONDS, os._exit, args=(1,))
    forced.daemon = True
    forced.start()
