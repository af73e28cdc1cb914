"""How a surface answers a failed call: the one hook every tool failure goes through.

The server names each failure with a machine code (`unknown_tool`, `validation_error`,
`internal_error`, or a CairnError's own code: `no_brain`, `forbidden`, …) and a message for humans.
A surface's ErrorPolicy turns that into what its clients expect: a tool result with isError true,
or, raised instead of returned, the SDK's MCPError, which the client receives as a JSON-RPC error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NoReturn, Protocol

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult
from pydantic import ValidationError


class ErrorPolicy(Protocol):
    def tool_error(self, code: str, message: str, cause: BaseException | None = None) -> CallToolResult:
        """The failed call's result (isError true), or raise MCPError for a JSON-RPC error. `cause` is
        the core's error when there is one, for the details a surface puts in its error data."""
        ...


JSON_RPC_CODES: Mapping[str, int] = {
    "unknown_tool": INVALID_PARAMS,  # the MCP specification's code for an unknown tool
    "validation_error": INVALID_PARAMS,
    "internal_error": INTERNAL_ERROR,
}


class JsonRpcErrors:
    """Every failure as a JSON-RPC error: `codes` maps a failure's code to the JSON-RPC error code
    (else `default`); the failure's own code travels in `data.code`."""

    def __init__(self, codes: Mapping[str, int] = JSON_RPC_CODES, default: int = INTERNAL_ERROR) -> None:
        self.codes = dict(codes)
        self.default = default

    def tool_error(self, code: str, message: str, cause: BaseException | None = None) -> NoReturn:
        raise MCPError(self.codes.get(code, self.default), message, data={"code": code})


def validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        # pydantic's "a valid dictionary or instance of <our class name>" names the code, not the input
        said = "Input should be an object" if err["type"] == "model_type" else err["msg"]
        parts.append(f"{where}: {said}")
    return "; ".join(parts)
