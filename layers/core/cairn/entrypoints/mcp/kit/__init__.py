"""The surface-neutral MCP kit: declare tools (spec.py), say how failures are answered (errors.py)
and what the audit records (audit.py), and serve them (server.py). Nothing here belongs to one
surface; each surface is a package beside this one (docs/ARCHITECTURE.md, "MCP serving")."""

from cairn.entrypoints.mcp.kit.audit import AuditSink, CallAudit, container_audit
from cairn.entrypoints.mcp.kit.errors import ErrorPolicy, JsonRpcErrors, validation_message
from cairn.entrypoints.mcp.kit.json_errors import JsonToolErrors, error_result
from cairn.entrypoints.mcp.kit.schema import clean_schema
from cairn.entrypoints.mcp.kit.server import SurfaceServer
from cairn.entrypoints.mcp.kit.spec import (
    AuditTarget,
    SurfaceDeps,
    ToolArgs,
    ToolSpec,
    audit_from_meta,
    audit_meta,
    declare,
    ok_result,
)
from cairn.entrypoints.mcp.kit.surface import SurfaceDecl, services_of

__all__ = [
    "AuditSink",
    "AuditTarget",
    "CallAudit",
    "ErrorPolicy",
    "JsonRpcErrors",
    "JsonToolErrors",
    "SurfaceDecl",
    "SurfaceDeps",
    "SurfaceServer",
    "ToolArgs",
    "ToolSpec",
    "audit_from_meta",
    "audit_meta",
    "clean_schema",
    "container_audit",
    "declare",
    "error_result",
    "ok_result",
    "services_of",
    "validation_message",
]
