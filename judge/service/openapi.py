"""The OpenAPI 3.1 document of the HTTP service (``GET /openapi.json``, ``docs/openapi.json``).

Schemas come from the pydantic models the service validates with (hook contexts, custom
agents, the decision object); the small shapes only the service has (request extras,
errors, the stored agent) are declared here as models too.
``python -m judge.service.openapi`` prints the document (``docs/openapi.json`` is that
output; a test checks it is up to date).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from judge.config import EVENTS, CustomAgent
from judge.context import PostToolUseContext, PreToolUseContext, StopContext
from judge.decision import HookOutcome, StopOutcome
from judge.integrations.claude_code.protocol import REWRITE_MODES, ClaudeCodeInput

VERSION = "2"


class _HookExtras(BaseModel):
    hook_event_name: str | None = Field(None, description="Optional; when given it must match the URL.")
    session_id: str | None = Field(
        None,
        min_length=1,
        max_length=256,
        description="Stop/SubagentStop: the service keeps this session's rejection count.",
    )
    transcript: str | None = Field(
        None,
        description="The transcript as text (instead of execution_summary); kept in a private "
        "file for the request only.",
    )


class StopRequest(_HookExtras, StopContext):
    """Body of POST /api/v2/hooks/Stop and /SubagentStop."""


class PostToolUseRequest(_HookExtras, PostToolUseContext):
    """Body of POST /api/v2/hooks/PostToolUse."""


class PreToolUseRequest(_HookExtras, PreToolUseContext):
    """Body of POST /api/v2/hooks/PreToolUse."""


class HookSpecificOutput(BaseModel):
    hook_event_name: str = Field(alias="hookEventName")
    additional_context: str = Field(alias="additionalContext")


class DecisionResponse(BaseModel):
    """The decision object."""

    model_config = ConfigDict(populate_by_name=True)

    decision: Literal["allow", "block"]
    reason: str | None
    forced_stop: bool = Field(alias="forcedStop")
    rejection_count: int = Field(alias="rejectionCount", ge=0)
    outcome: StopOutcome | None = Field(
        None,
        description="Stop and SubagentStop: how the stop ended - approved, rejected, forced "
        "(maxRejections), impossible (the judge says it cannot be finished without the user), "
        "stalled (the same answer rejected for the same reason again), deferred (prompt hooks "
        "not run while background tasks run), failed_open / failed_closed (a hook error let it "
        "stop / sent it back). Absent on tool events.",
    )
    hook_specific_output: HookSpecificOutput | None = Field(None, alias="hookSpecificOutput")
    updated_input: dict[str, Any] | None = Field(None, alias="updatedInput")
    hooks: list[HookOutcome]


class AgentDocument(BaseModel):
    """PUT body, platform form (the resource form with ``spec`` is accepted too)."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, description="Must match the URL when given.")
    properties: CustomAgent


class AgentResource(BaseModel):
    """PUT body, resource form."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    api_version: str | None = Field(None, alias="apiVersion")
    kind: Literal["ExtendedAgent"] | None = None
    metadata: dict[str, Any] | None = None
    spec: CustomAgent


class StoredAgent(BaseModel):
    name: str
    properties: CustomAgent


class AgentList(BaseModel):
    agents: list[StoredAgent]


class Health(BaseModel):
    status: Literal["ok"]


class ApiErrorBody(BaseModel):
    """Every error: a 4xx (or 5xx) status with this body."""

    error: str
    problems: list[str] | None = None


_MODELS: list[type[BaseModel]] = [
    StopRequest,
    PostToolUseRequest,
    PreToolUseRequest,
    DecisionResponse,
    AgentDocument,
    AgentResource,
    StoredAgent,
    AgentList,
    Health,
    ApiErrorBody,
    ClaudeCodeInput,
]
_REQUEST_MODELS = {
    StopRequest,
    PostToolUseRequest,
    PreToolUseRequest,
    AgentDocument,
    AgentResource,
    ClaudeCodeInput,
}


def _ref(model: type[BaseModel]) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{model.__name__}"}


def _json(model: type[BaseModel] | dict[str, Any]) -> dict[str, Any]:
    schema = model if isinstance(model, dict) else _ref(model)
    return {"application/json": {"schema": schema}}


def _errors(*statuses: int) -> dict[str, Any]:
    text = {
        400: "Malformed or invalid body or parameter",
        401: "Missing or invalid bearer token",
        404: "Not found",
        408: "The body did not arrive in time",
        413: "Body over the size limit",
        415: "Unsupported Content-Type",
        503: "A custom agent's hooks cannot be looked up (the state store is down)",
    }
    return {str(s): {"description": text[s], "content": _json(ApiErrorBody)} for s in statuses}


_AUTH: list[dict[str, list[str]]] = [{"bearer": []}]


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of the service."""
    keyed = [(m, "validation" if m in _REQUEST_MODELS else "serialization") for m in _MODELS]
    _, defs = models_json_schema(keyed, ref_template="#/components/schemas/{model}")  # type: ignore[arg-type]
    schemas = defs.get("$defs", {})
    name = {
        "name": "name",
        "in": "path",
        "required": True,
        "schema": {"type": "string", "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"},
    }
    hook_events: dict[str, type[BaseModel]] = {
        "Stop": StopRequest,
        "SubagentStop": StopRequest,
        "PostToolUse": PostToolUseRequest,
        "PreToolUse": PreToolUseRequest,
    }
    assert set(hook_events) == set(EVENTS)
    paths: dict[str, Any] = {
        "/healthz": {
            "get": {
                "summary": "Liveness (never needs a token)",
                "operationId": "healthz",
                "security": [],
                "responses": {"200": {"description": "Alive", "content": _json(Health)}},
            }
        },
        "/readyz": {
            "get": {
                "summary": "Readiness: the state store answers (never needs a token)",
                "operationId": "readyz",
                "security": [],
                "responses": {
                    "200": {"description": "Ready", "content": _json({})},
                    "503": {"description": "The state store cannot be used", "content": _json({})},
                },
            }
        },
        "/openapi.json": {
            "get": {
                "summary": "This document (never needs a token)",
                "operationId": "openapi",
                "security": [],
                "responses": {"200": {"description": "The OpenAPI document", "content": _json({})}},
            }
        },
        "/metrics": {
            "get": {
                "summary": "Prometheus metrics of the gate's decisions, hooks, latency and tokens",
                "operationId": "metrics",
                "responses": {
                    "200": {
                        "description": "Prometheus text exposition format",
                        "content": {"text/plain": {"schema": {"type": "string"}}},
                    },
                    **_errors(401),
                },
            }
        },
        "/ui": {
            "get": {
                "summary": "The live view of the gate: an HTML page with no data (never needs a token)",
                "operationId": "ui",
                "security": [],
                "responses": {
                    "200": {
                        "description": "The page",
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    }
                },
            }
        },
        "/api/v2/ui/summary": {
            "get": {
                "summary": "What the live view shows: recent decisions, block rate per hook, top rejection "
                "reasons, forced stops, decisions/blocks/errors per minute over the last hour",
                "operationId": "uiSummary",
                "responses": {"200": {"description": "The summary", "content": _json({})}, **_errors(401)},
            }
        },
        "/api/v2/extendedAgent/agents": {
            "get": {
                "summary": "List the registered custom agents, sorted by name",
                "operationId": "listAgents",
                "responses": {
                    "200": {"description": "The agents", "content": _json(AgentList)},
                    **_errors(401),
                },
            }
        },
        "/api/v2/extendedAgent/agents/{name}": {
            "parameters": [name],
            "put": {
                "summary": "Register or replace a custom agent",
                "operationId": "putAgent",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {"schema": {"anyOf": [_ref(AgentDocument), _ref(AgentResource)]}},
                        "application/yaml": {"schema": _ref(AgentResource)},
                    },
                },
                "responses": {
                    "202": {"description": "Stored (normalised)", "content": _json(StoredAgent)},
                    **_errors(400, 401, 408, 413, 415),
                },
            },
            "get": {
                "summary": "A registered custom agent",
                "operationId": "getAgent",
                "responses": {
                    "200": {"description": "The agent", "content": _json(StoredAgent)},
                    **_errors(400, 401, 404),
                },
            },
            "delete": {
                "summary": "Remove a registered custom agent",
                "operationId": "deleteAgent",
                "responses": {"204": {"description": "Removed"}, **_errors(400, 401, 404)},
            },
        },
    }
    for event, model in hook_events.items():
        paths[f"/api/v2/hooks/{event}"] = {
            "post": {
                "summary": f"Evaluate the {event} hooks",
                "operationId": f"hook{event}",
                "requestBody": {"required": True, "content": _json(model)},
                "responses": {
                    "200": {"description": "The decision", "content": _json(DecisionResponse)},
                    **_errors(400, 401, 408, 413, 415, 503),
                },
            }
        }
    paths["/api/v2/claude-code"] = _claude_code_path()
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "judge gate service",
            "version": VERSION,
            "description": "POST a hook event, get back allow or block. See docs/service.md.",
        },
        "servers": [{"url": "http://127.0.0.1:8080"}],
        "security": _AUTH,
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Required on every endpoint but /healthz, /readyz, /openapi.json and /ui "
                    "when JUDGE_API_TOKEN is set.",
                }
            },
        },
    }


def _claude_code_path() -> dict[str, Any]:
    """``POST /api/v2/claude-code`` (:mod:`judge.service.claude_code`)."""
    query = [
        {
            "name": "rewrite",
            "in": "query",
            "required": False,
            "description": "How a PreToolUse rewrite reaches Claude Code (judge claude-code --rewrite).",
            "schema": {"type": "string", "enum": list(REWRITE_MODES), "default": "passthrough"},
        },
        {
            "name": "timeout",
            "in": "query",
            "required": False,
            "description": "Seconds: the answer comes by then, per the hooks' failMode (judge claude-code "
            "--timeout); keep it below the hook entry's own timeout.",
            "schema": {"type": "number", "minimum": 1, "maximum": 3600},
        },
    ]
    answer = {"type": "object", "description": "Claude Code's hook output, as judge claude-code prints it."}
    return {
        "post": {
            "summary": "Claude Code's own hook input in, its hook output out (type: http hooks)",
            "operationId": "claudeCode",
            "parameters": query,
            "requestBody": {"required": True, "content": _json(ClaudeCodeInput)},
            "responses": {
                "200": {
                    "description": "Claude Code's answer ({} when there is nothing to say). "
                    "Unusable hook input is answered here too, per the hooks' failMode.",
                    "content": _json(answer),
                },
                **_errors(400, 401, 408, 503),
            },
        }
    }


def render() -> str:
    """The document as written to ``docs/openapi.json``."""
    return json.dumps(openapi_document(), indent=2, ensure_ascii=False) + "\n"
