"""The HTTP gate service (``judge serve``): a Starlette app answering hook events, custom
agents, logs, metrics, the live view and its OpenAPI document.

* :mod:`judge.service.run` — start-up: settings, uvicorn, workers, signals;
* :mod:`judge.service.app` — the ASGI app: routes, authentication, refusals;
* :mod:`judge.service.endpoints` — :class:`~judge.service.endpoints.Service`, one
  configuration's endpoints (hook events, custom agents, logs);
* :mod:`judge.service.bodies`, :mod:`~judge.service.limits`, :mod:`~judge.service.files` —
  what a client may send: body size and shape, connection limits and deadlines, the
  transcripts it may name;
* :mod:`judge.service.agents` — custom agents registered over HTTP, checked as
  ``judge validate`` checks a file;
* :mod:`judge.service.store` — the state store and log table the service opens;
* :mod:`judge.service.metrics`, :mod:`~judge.service.ui`, :mod:`~judge.service.openapi`,
  :mod:`~judge.service.logging_config`, :mod:`~judge.service.workers` — ``/metrics``, ``/ui``,
  ``/openapi.json``, rate-limited logging, ``--workers``.
"""
