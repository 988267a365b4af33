"""A minimal MCP server on stdio (JSON-RPC, one message a line) with one tool, ``secret``,
for the real-client tests: Claude Code calls it as ``mcp__demo__secret``."""

from __future__ import annotations

import json
import sys

TEXT = "MCP-SECRET-VALUE"


def answer(message: dict[str, object]) -> dict[str, object] | None:
    method = message.get("method")
    params = message.get("params")
    if method == "initialize":
        version = params.get("protocolVersion") if isinstance(params, dict) else None
        return {
            "protocolVersion": version or "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "demo", "version": "1"},
        }
    if method == "tools/list":
        schema = {"type": "object", "properties": {}}
        return {"tools": [{"name": "secret", "description": "Returns a secret", "inputSchema": schema}]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": TEXT}], "isError": False}
    return None


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if not isinstance(message, dict) or message.get("id") is None:
            continue
        result = answer(message)
        reply: dict[str, object] = {"jsonrpc": "2.0", "id": message["id"]}
        if result is None:
            reply["error"] = {"code": -32601, "message": f"unknown method {message.get('method')}"}
        else:
            reply["result"] = result
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
