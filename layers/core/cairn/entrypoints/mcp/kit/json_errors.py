"""The JSON tool-error style of the canonical and admin surfaces (the canonical seed's `toToolError`).

Every failure is a tool result with `isError: true` and one text block holding a JSON object:

    {"code": "no_brain", "message": "no brain matches 'x'"}

`code` is machine-readable (validation_error, no_brain, not_found, conflict, file_too_large,
url_refused, fetch_failed, unsupported_content, forbidden, payload_too_large, unknown_tool,
internal_error); `message` is for humans. No structuredContent is sent with an error, so clients
never validate it against a tool's outputSchema.
"""

from __future__ import annotations

import json

from mcp_types import CallToolResult, TextContent


def error_result(code: str, message: str) -> CallToolResult:
    body = json.dumps({"code": code, "message": message}, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=body)], is_error=True)


class JsonToolErrors:
    """The ErrorPolicy of the canonical surface (and of the admin one, which answers alike)."""

    def tool_error(self, code: str, message: str, cause: BaseException | None = None) -> CallToolResult:
        return error_result(code, message)
