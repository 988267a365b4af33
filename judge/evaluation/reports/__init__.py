"""The renderings of an eval run's metrics: ``report.html`` (:mod:`~judge.evaluation.reports.html`),
``junit.xml`` (:mod:`~judge.evaluation.reports.junit`), the cascade section
(:mod:`~judge.evaluation.reports.cascade`), and a comparison of variants as
``comparison.json`` and ``comparison.html`` (:mod:`~judge.evaluation.reports.comparison`,
:mod:`~judge.evaluation.reports.comparison_html`); the files one run writes are
:mod:`~judge.evaluation.reports.written`."""
