"""Tuning hook prompts against labelled transcripts (``judge tune``).

* :mod:`judge.tuning.splits` — group-preserving, seeded train/dev/test splits;
* :mod:`judge.tuning.stats` — majority vote, flip rate, exact McNemar, flipped items;
* :mod:`judge.tuning.contract` — ``$ARGUMENTS`` and the answer schema survive edits;
* :mod:`judge.tuning.optimizer` — the ProTeGi-style search with call budgets;
* :mod:`judge.tuning.measure` — measuring a prompt on a split of an eval suite;
* :mod:`judge.tuning.tuner` — the whole job and ``--compare``;
* :mod:`judge.tuning.report` — the HTML report (claims only what test shows).
"""
