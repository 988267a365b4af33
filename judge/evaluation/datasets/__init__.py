"""Eval suites made from data: public datasets (LLMBar, τ-bench) by
:mod:`~judge.evaluation.datasets.convert`, and a service's shadow log by
:mod:`~judge.evaluation.datasets.shadow` (``judge datasets convert``)."""
