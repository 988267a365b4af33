"""Tuning hook prompts against labelled transcripts (``judge tune``).

* :mod:`judge.tuning.plan` — the options, the hook, the split and the objective, checked;
* :mod:`judge.tuning.splits` — group-preserving, seeded train/dev/test splits;
* :mod:`judge.tuning.stats` — paired comparisons (exact McNemar, flipped items);
* :mod:`judge.tuning.contract` — ``$ARGUMENTS`` and the answer schema survive edits;
* :mod:`judge.tuning.candidates` — items, measurements and candidate prompts;
* :mod:`judge.tuning.objective` — ``--objective``, precision floors, tie-breakers;
* :mod:`judge.tuning.optimizer` — the search: reflection, demos, merges, budgets;
* :mod:`judge.tuning.reflection` — what the optimizer is asked; ``--optimizer-template``;
* :mod:`judge.tuning.demos` — few-shot demos from train cases, made inert;
* :mod:`judge.tuning.frontier` — the per-item Pareto frontier and the merge step;
* :mod:`judge.tuning.measure` — measuring a prompt on a split of an eval suite;
* :mod:`judge.tuning.money` — what ``--max-usd`` lets the search start;
* :mod:`judge.tuning.estimate` — ``judge tune --estimate``;
* :mod:`judge.tuning.tuner` — the whole job; :mod:`judge.tuning.compare` — ``--compare``;
* :mod:`judge.tuning.outputs`, :mod:`judge.tuning.report`, :mod:`judge.tuning.sections` —
  the files and the HTML report (claims only what test shows).
"""
