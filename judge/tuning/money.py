"""``judge tune --max-usd``: what the search may start, with the final test evaluation's share
held back.

The hard limit is the :class:`~judge.evaluation.spending.UsdLimit` every request passes
(never a request past it). On top, like ``--max-calls``, work that cannot fit is not
started: a candidate's evaluation is started only when its judgements at the highest
cost per judgement measured so far (the estimate before the first measurement), and a
reflection's optimizer requests at their largest cost so far, fit in what is left; and
the test evaluation of the baseline and the winner is held back from the search
(:data:`SAFETY` x test judgements x (the baseline's + the costliest prompt's cost per
judgement)) until :meth:`Money.release`.
"""

from __future__ import annotations

from judge.evaluation.spending import UsdLimit
from judge.tuning.candidates import SplitEval

SAFETY = 1.25


class Money:
    """The money plan of one tuning run (see the module docstring)."""

    def __init__(
        self,
        limit: UsdLimit,
        test_judgements: int,
        per_judgement: float,
        per_request: float,
        optimizer: str | None,
    ) -> None:
        self.limit = limit
        self.test_judgements = test_judgements
        self.per_judgement = per_judgement
        self.per_request = per_request
        self.optimizer = optimizer
        self.baseline: float | None = None
        self.most = 0.0
        self._hold()

    def _hold(self) -> None:
        base = self.per_judgement if self.baseline is None else self.baseline
        self.limit.hold(self.test_judgements * (base + max(self.most, base)) * SAFETY)

    def learn(self, ev: SplitEval) -> None:
        """A measurement's cost per judgement (priced: ``ev.usd``) updates the plan."""
        if ev.usd is None:
            return
        if self.baseline is None:
            self.baseline = ev.usd
        self.most = max(self.most, ev.usd)
        self.per_judgement = self.most
        self._hold()

    def fits(self, judgements: int, requests: int) -> bool:
        per_request = max(self.per_request, self.limit.largest.get(self.optimizer or "", 0.0))
        return judgements * self.per_judgement + requests * per_request <= self.limit.available()

    def release(self) -> None:
        """The search is over: the test evaluation may use what was held back."""
        self.limit.hold(0.0)
