"""``judge eval --batch``: judgements through the providers' batch APIs (cheaper, hours of
latency, no tools), resumable.

* :mod:`~judge.evaluation.batch.run` — :func:`~judge.evaluation.batch.run.run_batch`, the run:
  plan, submit, poll, read the answers, judge the rest the normal way;
* :mod:`~judge.evaluation.batch.requests` — which judgements can go to a batch, as requests;
* :mod:`~judge.evaluation.batch.openai`, :mod:`~judge.evaluation.batch.anthropic` — each
  provider's batch API;
* :mod:`~judge.evaluation.batch.status`, :mod:`~judge.evaluation.batch.state`,
  :mod:`~judge.evaluation.batch.answers` — a batch's status, ``DIR/batch.json`` (what
  ``--resume`` polls again), and the answers turned into verdicts.
"""
