"""What a failed OpenSearch call means for Cairn.

opensearch-py raises TransportError subclasses (the status code, the error type and the parsed
body) and ConnectionError for transport trouble. `translate` maps them onto cairn.domain.errors
with a message made of the operation, the status and OpenSearch's own error type and reason
(shortened): never the request, its body, the endpoint URL or credentials.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opensearchpy import ConflictError, ConnectionError, RequestError, TransportError

from cairn.domain.errors import CairnError, Conflict, InvalidInput

_REASON_CHARS = 200


def _reason(error: Any) -> str:
    """`type: reason` of an OpenSearch error object (or its bare string)."""
    if isinstance(error, Mapping):
        causes = error.get("root_cause") or [error]
        first = causes[0] if isinstance(causes[0], Mapping) else error
        kind, reason = first.get("type", "error"), first.get("reason", "")
        text = f"{kind}: {reason}" if reason else str(kind)
    else:
        text = str(error)
    return text[:_REASON_CHARS]


def describe(response: Mapping[str, Any]) -> str:
    """`type: reason` of an error response (`{"error": ..., "status": ...}`), shortened."""
    return _reason(response.get("error", "unknown error"))


def error_type(exc: TransportError) -> str:
    """OpenSearch's error type (`resource_already_exists_exception`...), or "" if none was sent."""
    info = exc.info if isinstance(exc.info, Mapping) else {}
    error = info.get("error")
    if isinstance(error, Mapping):
        return str(error.get("type", ""))
    return exc.error if isinstance(exc.error, str) and exc.error.endswith("_exception") else ""


def translate(exc: Exception, operation: str) -> CairnError:
    if isinstance(exc, ConnectionError):
        return CairnError(f"OpenSearch {operation} failed: the cluster could not be reached")
    if isinstance(exc, TransportError):
        info = exc.info if isinstance(exc.info, Mapping) else {}
        reason = _reason(info["error"]) if "error" in info else str(exc.error)[:_REASON_CHARS]
        if isinstance(exc, ConflictError):
            return Conflict(f"OpenSearch {operation} conflicted with a concurrent write ({reason})")
        if isinstance(exc, RequestError):
            return InvalidInput(f"OpenSearch rejected the {operation} request ({reason})")
        return CairnError(f"OpenSearch {operation} failed with status {exc.status_code} ({reason})")
    return CairnError(f"OpenSearch {operation} failed ({type(exc).__name__})")


def failed_items(response: Mapping[str, Any]) -> list[str]:
    """Reasons of the bulk items that failed (empty when `errors` is false)."""
    if not response.get("errors"):
        return []
    reasons: list[str] = []
    for item in response.get("items", []):
        result: Mapping[str, Any] = next(iter(item.values()), {})
        if "error" in result:
            reasons.append(f"{result.get('_id', '?')}: {_reason(result['error'])}")
    return reasons
