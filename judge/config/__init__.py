"""Hook configuration: the YAML/JSON documents users write, validated with located messages.

The package is split by concept: :mod:`~judge.config.models` (the shapes),
:mod:`~judge.config.parse` (YAML/JSON with duplicate keys refused),
:mod:`~judge.config.load` (located validation of either form, loading files),
:mod:`~judge.config.entries` (one hook set's entries, located, with near misses) and
:mod:`~judge.config.schema` (the JSON Schema). The names below are the public API.
"""

from judge.config.entries import unknown_event
from judge.config.fields import MAX_SCRIPT_BYTES, SUPPORTED_SHEBANGS
from judge.config.load import (
    BARE_KEYS,
    RESOURCE_KEYS,
    config_from_data,
    config_from_text,
    load_config,
    read_config_text,
    validate_custom_agent,
)
from judge.config.models import (
    EVENTS,
    MATCH_TIMEOUT,
    STOP_EVENTS,
    TOOL_EVENTS,
    Config,
    CustomAgent,
    FailMode,
    Hook,
    HookSet,
    type_field_problems,
)
from judge.config.parse import duplicate_key_problems, parse_document, parse_yaml, unique_object
from judge.config.schema import config_json_schema

__all__ = [
    "BARE_KEYS",
    "EVENTS",
    "MATCH_TIMEOUT",
    "MAX_SCRIPT_BYTES",
    "RESOURCE_KEYS",
    "STOP_EVENTS",
    "SUPPORTED_SHEBANGS",
    "TOOL_EVENTS",
    "Config",
    "CustomAgent",
    "FailMode",
    "Hook",
    "HookSet",
    "config_from_data",
    "config_from_text",
    "config_json_schema",
    "duplicate_key_problems",
    "load_config",
    "parse_document",
    "parse_yaml",
    "read_config_text",
    "type_field_problems",
    "unique_object",
    "unknown_event",
    "validate_custom_agent",
]
