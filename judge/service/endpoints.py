"""The endpoints of the HTTP service, bound to one configuration,
state store, audit log and judge. :mod:`judge.service.app` routes requests here."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from judge.config import EVENTS, Config, unknown_event, validate_custom_agent
from judge.context import parse_context
from judge.decision import Decision
from judge.errors import ApiError, ConfigError, ContextError, StateUnavailable
from judge.hooks.calibration import calibrated
from judge.hooks.engine import Engine, default_judge
from judge.hooks.gate import Gate, fail_mode_decision
from judge.hooks.judging import PromptJudge
from judge.logs.audit import AuditLog
from judge.logs.buffer import BufferedLog
from judge.logs.decisions import append_decision, read_recent, record_of, summarize
from judge.service.agents import (
    AGENT_NAME,
    agent_from_document,
    agent_properties,
    check_name,
    without_command_defaults,
)
from judge.service.bodies import DEFAULT_MAX_BODY, json_response, read_document
from judge.service.files import (
    DEFAULT_MAX_TRANSCRIPT_BYTES,
    SnapshotTooSlow,
    confine_path,
    private_folder,
    remove_folder,
    snapshot_confined,
    write_private,
)
from judge.service.limits import DEFAULT_BODY_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_WRITE_TIMEOUT
from judge.service.metrics import GateMetrics
from judge.service.store import RECENT_ROWS, STATE_DB, open_log_table, open_service_store
from judge.state.session_lock import SessionBusy

__all__ = ["STATE_DB", "ServerSettings", "Service"]
_log = logging.getLogger("judge.server")
MAX_SESSION_ID = 256
#: Seconds a transcript snapshot may take when no hook applies (else: their longest timeout).
SNAPSHOT_SECONDS = 30.0
#: Validated custom agents kept per worker (re-validated whenever the stored body changes).
AGENT_CACHE_SIZE = 256


@dataclass(frozen=True)
class ServerSettings:
    """What the service needs; :func:`judge.cli.serve.settings_from_args` builds it from the flags."""

    config: Config
    data_dir: Path
    transcripts_dir: Path | None = None
    max_body: int = DEFAULT_MAX_BODY
    api_token: str | None = None
    #: Seconds a client has to send its request headers (:mod:`judge.service.limits`).
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    #: Seconds a client has to send the whole body once the headers are in.
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    #: Seconds a connection may wait, without progress, for its client to take its answers.
    write_timeout: float = DEFAULT_WRITE_TIMEOUT
    #: Largest ``execution_summary`` file copied for a request (larger: 413).
    max_transcript_bytes: int = DEFAULT_MAX_TRANSCRIPT_BYTES
    #: Open connections per worker; None: derived from the file descriptor limit.
    max_connections: int | None = None
    #: ``--state``: a ``postgresql://`` URL or a SQLite file; None: ``STATE_DB`` in data_dir.
    state: str | None = None
    #: ``--logs``: "files" (JSONL in data_dir) or "database" (the PostgreSQL state's table).
    logs: str = "files"


#: How long /readyz waits for the state store (a frozen database host neither fails nor answers).
READY_SECONDS = 3.0  # a backstop: the store gives up on its own after 2 s


class Service:
    """Request handlers bound to one configuration, store, audit log and judge."""

    def __init__(self, settings: ServerSettings, judge: PromptJudge | None = None) -> None:
        self.settings = settings
        self.store = open_service_store(settings.state, settings.data_dir)
        self.logs = open_log_table(settings.logs, self.store)
        self.audit = AuditLog(settings.data_dir, self.logs)
        #: The live view's records, written to the database in batches (``--logs database``).
        self.decision_log = (
            BufferedLog(self.logs, "decisions", self._decisions_lost) if self.logs is not None else None
        )
        self.judge: PromptJudge = judge if judge is not None else default_judge()
        root = settings.transcripts_dir
        self.transcripts_root = root.resolve() if root is not None else None
        self.engine = Engine(settings.config, judge=self.judge)
        self._agents: dict[str, tuple[dict[str, Any], Engine]] = {}
        self.metrics = GateMetrics()
        self._ping_answer: asyncio.Future[None] | None = None

    # -- endpoints -------------------------------------------------------------------

    async def healthz(self, request: Request) -> Response:
        return json_response({"status": "ok"})

    async def readyz(self, request: Request) -> Response:
        """Readiness: 200 when the state store answers, else 503 (take this replica out)."""
        try:
            await asyncio.wait_for(self._ping(), READY_SECONDS)
        except StateUnavailable as exc:
            return json_response({"status": "unavailable", "error": str(exc)}, 503)
        except TimeoutError:  # a frozen database host: the connection neither fails nor answers
            error = f"the state store did not answer within {READY_SECONDS:g} s"
            return json_response({"status": "unavailable", "error": error}, 503)
        return json_response({"status": "ready"})

    async def _ping(self) -> None:
        """The store's ping on a daemon thread of its own: a frozen database host leaves
        the call hanging, and neither the shutdown nor later checks may wait for it.
        Checks that come while one is running share its answer (no second thread)."""
        if self._ping_answer is None or self._ping_answer.done():
            loop = asyncio.get_running_loop()
            answer: asyncio.Future[None] = loop.create_future()
            self._ping_answer = answer
            answer.add_done_callback(lambda done: done.cancelled() or done.exception())  # seen

            def settle(error: BaseException | None) -> None:
                if answer.done():
                    return
                if error is not None:
                    answer.set_exception(error)
                else:
                    answer.set_result(None)

            def run() -> None:
                error: BaseException | None = None
                try:
                    self.store.ping()
                except BaseException as exc:  # handed to the waiting requests
                    error = exc
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(settle, error)

            threading.Thread(target=run, name="judge-readyz", daemon=True).start()
        await asyncio.shield(self._ping_answer)

    async def ui_summary(self, request: Request) -> Response:
        """What the live view (``GET /ui``) shows: see :func:`judge.logs.decisions.summarize`."""
        data_dir, logs, buffered = self.settings.data_dir, self.logs, self.decision_log

        def recent() -> list[dict[str, Any]]:
            if logs is None or buffered is None:
                return read_recent(data_dir)
            buffered.flush()  # this replica's newest answers too
            return logs.recent_log("decisions", RECENT_ROWS)

        try:
            return json_response(await asyncio.to_thread(lambda: summarize(recent())))
        except StateUnavailable as exc:
            raise ApiError(503, str(exc)) from None

    async def prometheus(self, request: Request) -> Response:
        body, content_type = await asyncio.to_thread(self.metrics.exposition)
        return Response(body, media_type=content_type)

    async def put_agent(self, request: Request) -> Response:
        name = check_name(request.path_params["name"])
        doc = await read_document(request, self.settings.max_body, yaml_ok=True)
        agent = await asyncio.to_thread(agent_from_document, name, doc, self.settings.config)
        stored = {"name": name, "properties": agent_properties(agent)}
        await asyncio.to_thread(self.store.put_agent, name, stored)
        return json_response(stored, 202)

    async def get_agent(self, request: Request) -> Response:
        name = check_name(request.path_params["name"])
        stored = await asyncio.to_thread(self.store.get_agent, name)
        if stored is None:
            raise ApiError(404, f"no custom agent named {name!r}")
        return json_response(stored)

    async def delete_agent(self, request: Request) -> Response:
        name = check_name(request.path_params["name"])
        if not await asyncio.to_thread(self.store.delete_agent, name):
            raise ApiError(404, f"no custom agent named {name!r}")
        return Response(status_code=204)

    async def agent(self, request: Request) -> Response:
        handlers = {"GET": self.get_agent, "PUT": self.put_agent, "DELETE": self.delete_agent}
        try:
            return await handlers[request.method](request)
        except StateUnavailable as exc:
            raise ApiError(503, str(exc)) from None

    async def list_agents(self, request: Request) -> Response:
        def load() -> list[dict[str, Any]]:
            found = (self.store.get_agent(n) for n in self.store.list_agents())
            return [a for a in found if a is not None]

        try:
            return json_response({"agents": await asyncio.to_thread(load)})
        except StateUnavailable as exc:
            raise ApiError(503, str(exc)) from None

    async def hook(self, request: Request) -> Response:
        try:
            return await self._hook(request)
        except ApiError as exc:
            self.metrics.refused(exc.status)
            raise

    async def _hook(self, request: Request) -> Response:
        started = time.perf_counter()
        event = request.path_params["event"]
        if event not in EVENTS:
            raise ApiError(404, unknown_event(event[:80]))
        context, transcript, session_id = _hook_body(
            event, await read_document(request, self.settings.max_body)
        )
        if session_id is not None:
            request.scope["judge.session"] = session_id
        decision = await self.decide(event, context, transcript, session_id)
        await self.record(event, context.get("agent_name"), session_id, decision, started)
        return json_response(decision.to_json())

    async def record(
        self, event: str, agent: Any, session_id: Any, decision: Decision, started: float
    ) -> None:
        """Count a decision in the metrics and write it to the decision log."""
        seconds = time.perf_counter() - started
        self.metrics.observe(event, agent, decision, seconds)
        record = record_of(event, agent, session_id, decision, seconds)
        if self.decision_log is not None:
            self.decision_log.add(record)
        else:
            await asyncio.to_thread(append_decision, self.settings.data_dir, record)

    async def decide(
        self, event: str, context: dict[str, Any], transcript: str | None, session_id: str | None
    ) -> Decision:
        """The gate's decision for a checked hook body: the transcript (inline, or a snapshot
        of a file under ``--transcripts-dir``) in a private folder for the request's life."""
        summary = context.get("execution_summary")
        resolved = None
        if summary is not None:
            resolved = Path(await asyncio.to_thread(confine_path, summary, self.transcripts_root))
        engine = self.engine
        # Created here and removed in ``finally`` without awaiting: nothing of a private
        # transcript (inline, or the snapshot of an execution_summary file) outlives the
        # request, even one cancelled or timed out.
        folder = private_folder() if summary is not None or transcript is not None else None
        try:
            # The gate runs the Stop rounds of one session one at a time (across replicas
            # too: StateStore.session_round).
            agent_known = False
            try:
                engine = await self._engine(context.get("agent_name"))
                agent_known = True
                path = await self._transcript(event, context, engine, transcript, resolved, folder)
                gate = Gate(engine, self.store, self.audit)
                return await gate.decide(event, context, transcript=path, session_id=session_id)
            except (StateUnavailable, SessionBusy, SnapshotTooSlow) as exc:
                if not isinstance(exc, SnapshotTooSlow):
                    self.metrics.state_error()
                decision = fail_mode_decision(engine, event, context, str(exc))
                if not agent_known and not decision.hooks:
                    # No hook of the configuration applies, and the agent's own could not be
                    # looked up: an allow here would judge nothing and say nothing.
                    name = context.get("agent_name")
                    raise ApiError(503, f"custom agent {name!r} could not be looked up: {exc}") from None
                return decision
        except ContextError as exc:
            raise ApiError(400, str(exc)) from None
        finally:
            if folder is not None:
                remove_folder(folder)

    async def _transcript(
        self,
        event: str,
        context: dict[str, Any],
        engine: Engine,
        inline: str | None,
        resolved: Path | None,
        folder: Path | None,
    ) -> Path | None:
        """The request's transcript in its private folder: the inline text written out, or a
        snapshot of its ``execution_summary`` file (then named in the context), bounded by
        ``--max-transcript-bytes`` and by the longest timeout of the hooks about to run."""
        if folder is None:
            return None
        if inline is not None:
            return await asyncio.to_thread(write_private, inline, folder)
        if resolved is None or self.transcripts_root is None:
            return None
        timeouts = [hook.timeout for _, _, hook in engine.selected_hooks(event, context)]
        deadline = time.monotonic() + max(timeouts, default=SNAPSHOT_SECONDS)
        snapshot = await asyncio.to_thread(
            snapshot_confined,
            resolved,
            self.transcripts_root,
            folder,
            max_bytes=self.settings.max_transcript_bytes,
            deadline=deadline,
        )
        context["execution_summary"] = str(snapshot)
        return None

    def _decisions_lost(self, count: int, problem: Exception) -> None:
        """Records of the live view the database did not take: the answers stand; say so."""
        self.metrics.log_write_error("decisions", count)
        _log.warning("%d decision record(s) were not logged: %s", count, problem)

    def close(self) -> None:
        """Write what is still buffered and close the state store."""
        if self.decision_log is not None:
            self.decision_log.close()
        self.store.close()

    async def engine_for(self, agent_name: Any) -> Engine:
        """The engine for a request of the custom agent ``agent_name`` (see :meth:`_engine`)."""
        return await self._engine(agent_name)

    async def _engine(self, agent_name: Any) -> Engine:
        """The engine for this request: --config hooks, plus a registered custom agent's.

        The agent is looked up on every request (another worker may have changed it) but
        validated again only when its stored body changed.
        """
        if not (isinstance(agent_name, str) and AGENT_NAME.match(agent_name)):
            return self.engine
        cached = self._agents.get(agent_name)
        try:
            stored = await asyncio.to_thread(self.store.get_agent, agent_name)
        except StateUnavailable as exc:
            if cached is None:
                raise  # the caller answers per failMode, or 503 when no hook applies
            # Judging without the agent's hooks would let through what they check.
            self.metrics.state_error()
            _log.warning("custom agent %r judged as last seen: %s", agent_name, exc)
            return cached[1]
        if stored is None:
            return self.engine
        if cached is not None and cached[0] == stored:
            return cached[1]
        try:
            agent = validate_custom_agent(without_command_defaults(stored.get("properties")))
        except ConfigError as exc:
            raise ApiError(500, f"stored custom agent {agent_name!r} is invalid", exc.problems) from None
        config = self.settings.config.with_custom_agent(agent_name, agent)
        if any(h.calibration for e in EVENTS for h in agent.hooks.for_event(e)):
            # read when the agent is (re)registered: its hooks' records, as the --config's at start-up
            config = await asyncio.to_thread(calibrated, config, None, None, agent_name)
        engine = Engine(config, judge=self.judge)
        if len(self._agents) >= AGENT_CACHE_SIZE:
            self._agents.clear()
        self._agents[agent_name] = (stored, engine)
        return engine


def _hook_body(event: str, body: Any) -> tuple[dict[str, Any], str | None, str | None]:
    """A hook request's body checked: the context, the inline transcript, the session id."""
    if not isinstance(body, dict):
        raise ApiError(400, f"body must be a JSON object (the hook context), got {type(body).__name__}")
    context = dict(body)
    transcript = context.pop("transcript", None)
    if transcript is not None and not isinstance(transcript, str):
        raise ApiError(400, f"transcript: must be a string, got {type(transcript).__name__}")
    session_id = context.get("session_id")
    if session_id is not None and (
        not isinstance(session_id, str)
        or not session_id
        or len(session_id) > MAX_SESSION_ID
        or "\x00" in session_id  # PostgreSQL's text refuses it: the store would "fail"
    ):
        raise ApiError(
            400, f"session_id: must be a non-empty string of at most {MAX_SESSION_ID} chars, without NUL"
        )
    try:
        parse_context(event, context)
    except ContextError as exc:
        raise ApiError(400, str(exc)) from None
    if context.get("execution_summary") is not None and transcript is not None:
        raise ApiError(400, "give either execution_summary or an inline transcript, not both")
    return context, transcript, session_id
