"""ThoughtMCP's response envelope and failure behaviour, as its server answers over MCP.

- Success: a text result, `{"success": true, "data": …}` pretty-printed with a 2-space indent
  (the metacognitive tools add `metadata`).
- A failure the tool reports (bad input, a memory not found, ThoughtMCP's validation codes): still a
  normal result, `{"success": false, "error": …, "suggestion": …}` (remember's length errors add
  `code` and `details`); isError is not set.
- An exception: isError true with `{"success": false, "error": …}`; Cairn's authorization refusals
  and the server's own failures (a damaged store, a memory's damaged bytes, a full disk, a store
  unavailable) also name their `code` (forbidden, unauthorized, damaged_store, damaged_content,
  storage_full, unavailable), so a client can tell them apart from a memory not found.
- An unknown tool: a JSON-RPC error (`Unknown tool: <name>`), as the real server throws.
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, CallToolResult, TextContent

from cairn.services.thoughtmcp.models import INVALID_SECTOR, SECTOR_SUGGESTION, ThoughtError

SCHEMA_SUGGESTION = "Check input schema for required fields"
REFUSALS = ("forbidden", "unauthorized")
SERVER_FAILURES = ("damaged_store", "damaged_content", "storage_full", "unavailable")
_MISSING = re.compile(r"^([\w.\[\]]+): Field required$")
_SECTOR = re.compile(
    r"^(primarySector|sectors\.\d+|memories\.\d+\.primarySector): Input should be 'episodic'"
)


def text(payload: dict[str, Any], *, error: bool = False) -> CallToolResult:
    body = json.dumps(payload, indent=2, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=body)], is_error=error)


def success(data: Any, metadata: dict[str, Any] | None = None) -> CallToolResult:
    payload: dict[str, Any] = {"success": True, "data": data}
    if metadata is not None:
        payload["metadata"] = metadata
    return text(payload)


def failure(error: str, suggestion: str | None = None, **extra: Any) -> CallToolResult:
    payload: dict[str, Any] = {"success": False, "error": error}
    payload.update({k: v for k, v in extra.items() if v is not None})
    if suggestion is not None:
        payload["suggestion"] = suggestion
    return text(payload)


def refused(result: CallToolResult) -> bool:
    """Whether a result is a failure: isError, or the envelope's `success: false`."""
    if result.is_error:
        return True
    first = result.content[0] if result.content else None
    if not isinstance(first, TextContent):
        return False
    try:
        body = json.loads(first.text)
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("success") is False


class ThoughtErrors:
    """The kit's ErrorPolicy for this surface (the module docstring)."""

    def tool_error(self, code: str, message: str, cause: BaseException | None = None) -> CallToolResult:
        if code == "unknown_tool":
            self._unknown(message)
        if isinstance(cause, ThoughtError):
            return failure(cause.message, cause.suggestion, code=cause.error_code, details=cause.details)
        if code == "validation_error":
            if all(_SECTOR.match(part.strip()) for part in message.split(";")):
                return failure(INVALID_SECTOR, SECTOR_SUGGESTION)  # the seed's error for an unknown sector
            return failure(_parameters(message), SCHEMA_SUGGESTION)
        if code in REFUSALS or code in SERVER_FAILURES:
            return text({"success": False, "error": message, "code": code}, error=True)
        if code in ("not_found", "conflict", "no_brain"):
            return failure(message, None)
        if code == "internal_error":
            return text({"success": False, "error": message}, error=True)
        if cause is not None and code not in ("reasoning_failed",):
            return failure(message, None)  # the core refused the input: the tool's own answer
        return text({"success": False, "error": message}, error=True)

    @staticmethod
    def _unknown(message: str) -> NoReturn:
        raise MCPError(INTERNAL_ERROR, f"Unknown tool: {message.removeprefix('unknown tool: ')}")


def _parameters(message: str) -> str:
    """`Missing required parameter: a, b` when only required fields are missing, else the detail."""
    parts = [part.strip() for part in message.split(";")]
    missing = [m.group(1) for part in parts if (m := _MISSING.match(part))]
    if missing and len(missing) == len(parts):
        return f"Missing required parameter: {', '.join(missing)}"
    return f"Invalid parameters: {message}"
