"""How a surface is declared: one frozen value per surface package (`SURFACE`), served by `serve`.

The registry names each surface's declaration; nothing else builds a SurfaceServer, so every
surface gets the same audit and the same handling of its tools."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from mcp_types import CallToolResult

from cairn.container import Container
from cairn.entrypoints.mcp.kit.audit import container_audit
from cairn.entrypoints.mcp.kit.errors import ErrorPolicy
from cairn.entrypoints.mcp.kit.server import SurfaceServer, refused_when_error
from cairn.entrypoints.mcp.kit.spec import SurfaceDeps, ToolSpec
from cairn.services.ingest.inputs import LocalFilePolicy


@dataclass(frozen=True)
class SurfaceDecl:
    name: str
    """The server name it gives in `initialize`."""
    version: str
    tools: Sequence[ToolSpec[Any]]
    """In tools/list order."""
    errors: ErrorPolicy
    services: Callable[[Container], Any]
    """The services its tools get (SurfaceDeps.services), taken from the Container."""
    instructions: str | None = None
    nullable_optionals: bool = False
    """Advertise an optional argument as anyOf [type, null], as FastMCP does for `x: T | None = None`."""
    decode_json_strings: bool = True
    """Take a JSON-encoded string where a list or object is expected (`"[\"x\"]"`), as the Python
    SDK's servers do; a surface whose original refuses it (a typed Rust server) sets False."""
    refused: Callable[[CallToolResult], bool] = refused_when_error
    """Whether a result says the call was refused (so nothing is audited): isError, unless the
    surface's original answers refusals as normal results (ThoughtMCP's `success: false`)."""

    @property
    def scopes(self) -> dict[str, str]:
        """The scope each tool needs."""
        return {spec.name: spec.scope for spec in self.tools}

    def serve(self, container: Container, local_files: LocalFilePolicy) -> SurfaceServer:
        return SurfaceServer(
            self.name,
            version=self.version,
            tools=self.tools,
            deps=SurfaceDeps(self.services(container), local_files),
            errors=self.errors,
            audit=container_audit(container),
            instructions=self.instructions,
            nullable_optionals=self.nullable_optionals,
            decode_json_strings=self.decode_json_strings,
            refused=self.refused,
        )


S = TypeVar("S")


def services_of(kind: type[S], container: Container, **given: Any) -> S:
    """The dataclass `kind` of a surface's services: each field is the Container's service of that
    name, unless `given` (a value the Container holds elsewhere, or one made for the surface)."""
    names = [f.name for f in fields(kind)]  # type: ignore[arg-type]
    return kind(**{name: given[name] if name in given else getattr(container, name) for name in names})
