"""``GET /metrics``: the gate's decisions as Prometheus metrics.

What is counted (names as exposed):

- ``judge_decisions_total{event, agent, outcome}``: decisions; outcome ``allow``, ``block``
  or ``forced_stop``;
- ``judge_forced_stops_total{event, agent}``: stops forced through at ``maxRejections``;
- ``judge_stop_outcomes_total{event, agent, outcome}``: how each Stop and SubagentStop
  ended: ``approved``, ``rejected``, ``forced``, ``impossible``, ``stalled``, ``deferred``,
  ``failed_open``, ``failed_closed``;
- ``judge_hook_results_total{event, agent, hook, type, outcome}``: each hook's result,
  ``allow``, ``block`` or ``error`` (``hook`` is ``agent[0]``, ``custom[1]``, ...);
- ``judge_hook_errors_total{event, agent, hook, type}``: hook errors (timeouts, crashes,
  provider failures);
- ``judge_hook_calibration_total{event, agent, hook, status}``: results of hooks with a
  ``calibration:`` block by its status, ``ok`` (enforced) or ``missing``, ``stale``,
  ``below`` (run as shadow: never acted on);
- ``judge_decision_seconds{event}`` and ``judge_hook_seconds{event, type}``: histograms;
- ``judge_tokens_total{model, kind}``: prompt-hook tokens, ``kind`` input or output;
- ``judge_cost_usd_total{model}``: what they cost, for models with a known price;
- ``judge_requests_rejected_total{status}``: hook requests refused with a 4xx or 5xx;
- ``judge_state_errors_total``: hook requests answered per ``failMode`` because the state
  store could not be used (database down, pool exhausted, Stop round wait exceeded);
- ``judge_log_write_errors_total{log}``: records of a log kept in the database
  (``--logs database``) that could not be written after the decision was made (the
  decision is still answered; each loss is also logged as a warning).

``agent`` is the custom agent named by the context's ``agent_name`` (empty for none).

With ``judge serve --workers N`` the workers share their metrics through files in a
private folder (prometheus_client's multiprocess mode, ``PROMETHEUS_MULTIPROC_DIR``), so
a scrape of any worker reports the whole service.
"""

from __future__ import annotations

import os
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client import multiprocess as prometheus_multiprocess

from judge.decision import Decision, Usage
from judge.service.agents import AGENT_NAME

#: Environment variable of prometheus_client's multiprocess mode (set by ``judge serve --workers``).
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
_SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


#: Distinct ``agent`` label values one process keeps (the rest are counted as ``other``).
MAX_AGENT_LABELS = 200
OTHER_AGENTS = "other"


class GateMetrics:
    """The service's counters and histograms (one registry per app)."""

    def __init__(self) -> None:
        self._agents: set[str] = set()
        self.multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        # In multiprocess mode values live in files; the registry here is only for creation.
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.decisions = Counter(
            "judge_decisions", "Decisions by event, custom agent and outcome",
            ["event", "agent", "outcome"], registry=reg,
        )  # fmt: skip
        self.forced_stops = Counter(
            "judge_forced_stops", "Stops forced through at maxRejections", ["event", "agent"], registry=reg
        )
        self.stop_outcomes = Counter(
            "judge_stop_outcomes", "How each Stop ended (approved, rejected, forced, impossible, stalled, "
            "deferred, failed_open, failed_closed)", ["event", "agent", "outcome"], registry=reg,
        )  # fmt: skip
        self.hook_results = Counter(
            "judge_hook_results", "Each hook's result (allow, block, error)",
            ["event", "agent", "hook", "type", "outcome"], registry=reg,
        )  # fmt: skip
        self.hook_errors = Counter(
            "judge_hook_errors", "Hook errors (timeouts, crashes, provider failures)",
            ["event", "agent", "hook", "type"], registry=reg,
        )  # fmt: skip
        self.hook_calibration = Counter(
            "judge_hook_calibration", "Results of calibrated hooks by calibration status (not ok: shadow)",
            ["event", "agent", "hook", "status"], registry=reg,
        )  # fmt: skip
        self.decision_seconds = Histogram(
            "judge_decision_seconds", "Seconds to a decision", ["event"], buckets=_SECONDS, registry=reg
        )
        self.hook_seconds = Histogram(
            "judge_hook_seconds", "Seconds per hook", ["event", "type"], buckets=_SECONDS, registry=reg
        )
        self.tokens = Counter("judge_tokens", "Prompt-hook tokens", ["model", "kind"], registry=reg)
        self.cost = Counter(
            "judge_cost_usd", "Prompt-hook cost in US dollars (known prices)", ["model"], registry=reg
        )
        self.rejected = Counter(
            "judge_requests_rejected", "Hook requests refused with a 4xx or 5xx", ["status"], registry=reg
        )
        self.state_errors = Counter(
            "judge_state_errors", "Hook requests answered per failMode: the state store failed", registry=reg
        )
        self.log_write_errors = Counter(
            "judge_log_write_errors",
            "Log records the state database did not take (the decision was answered)",
            ["log"],
            registry=reg,
        )

    def agent_label(self, agent: Any) -> str:
        """The ``agent`` label of a request's ``agent_name``: a client chooses it, so only
        a well-formed name, and only the first :data:`MAX_AGENT_LABELS` of them, get their
        own series; the rest share ``other`` (the exposition and memory stay bounded)."""
        if agent is None:
            return ""
        if not isinstance(agent, str) or not AGENT_NAME.match(agent):
            return OTHER_AGENTS
        if agent not in self._agents:
            if len(self._agents) >= MAX_AGENT_LABELS:
                return OTHER_AGENTS
            self._agents.add(agent)
        return agent

    def observe(self, event: str, agent: Any, decision: Decision, seconds: float) -> None:
        """Count one decision of ``event`` for the custom agent named ``agent``."""
        agent_label = self.agent_label(agent)
        outcome = "forced_stop" if decision.forced_stop else decision.decision
        self.decisions.labels(event, agent_label, outcome).inc()
        if decision.forced_stop:
            self.forced_stops.labels(event, agent_label).inc()
        if decision.outcome is not None:
            self.stop_outcomes.labels(event, agent_label, decision.outcome).inc()
        self.decision_seconds.labels(event).observe(seconds)
        for hook in decision.hooks:
            name = f"{hook.level}[{hook.index}]"
            result = "error" if hook.error else hook.decision
            self.hook_results.labels(event, agent_label, name, hook.type, result).inc()
            if hook.error:
                self.hook_errors.labels(event, agent_label, name, hook.type).inc()
            if hook.calibration is not None:
                self.hook_calibration.labels(event, agent_label, name, hook.calibration.status).inc()
            self.hook_seconds.labels(event, hook.type).observe(hook.duration_ms / 1000.0)
            # A cascade's tokens and cost go to the model of each stage that spent them.
            spent: list[tuple[str | None, Usage | None, float | None]] = [
                (s.model, s.usage, s.cost_usd) for s in hook.stages or []
            ] or [(hook.model, hook.usage, hook.cost_usd)]
            for model, usage, cost in spent:
                if usage is not None and model:
                    self.tokens.labels(model, "input").inc(usage.input_tokens)
                    self.tokens.labels(model, "output").inc(usage.output_tokens)
                if cost and model:
                    self.cost.labels(model).inc(cost)

    def log_write_error(self, log: str, count: int = 1) -> None:
        """Count ``count`` records of ``log`` that could not be written (the decisions stand)."""
        self.log_write_errors.labels(log).inc(count)

    def state_error(self) -> None:
        """Count a hook request the state store failed (answered per failMode)."""
        self.state_errors.inc()

    def refused(self, status: int) -> None:
        """Count a hook request answered with an error status."""
        self.rejected.labels(str(status)).inc()

    def exposition(self) -> tuple[bytes, str]:
        """The Prometheus text exposition and its content type."""
        if self.multiprocess:
            registry = CollectorRegistry()
            prometheus_multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return generate_latest(registry), CONTENT_TYPE_LATEST
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
