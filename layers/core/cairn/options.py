"""The options the composition root hands each part of Cairn: plain values read from Settings
once (bootstrap/options.py), so no service or surface reads configuration itself."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Limits:
    """What one request may carry (the store protocol's body limits and the upload cap)."""

    max_put_bytes: int
    max_list_items: int
    max_file_bytes: int
    max_batch_ops: int
    max_batch_bytes: int
    json_body_limit: int
    read_redirect_bytes: int
    """A document read above this many bytes is a redirect to a presigned download, where one is offered."""


@dataclass(frozen=True)
class HttpOptions:
    host: str
    public_url: str | None
    """This server's base URL as clients see it; None: from each request."""
    on_aws: bool
    """Behind API Gateway: it authenticates, throttles and checks the Host header."""
    ingest_root: Path
    """HTTP memory_ingest_file reads only below this directory."""
    rate_per_s: float | None
    """Requests per second per principal (0: unlimited); None: no limiter (AWS throttles)."""
    rate_burst: int
    limit_open: bool
    """The open loopback owner is limited too (only when a rate was set explicitly)."""
    max_in_flight: int | None
    """Requests per principal running at once (0: unlimited); None: not counted (AWS: one a Lambda)."""
    limit_open_in_flight: bool
    """The open loopback owner's running requests are counted too (only when set explicitly)."""
    failures_per_min: float | None
    """Refused credentials per client address a minute, past `failure_burst` (0: unlimited); None:
    not counted (AWS: API Gateway throttles)."""
    failure_burst: int
    jwt_issuer: str | None
    jwt_scope_prefix: str | None
    events_ping_s: float
    ui_client_id: str | None = None
    """The user pool app client the web UI signs users in with (entrypoints/ui/cognito.py)."""


@dataclass(frozen=True)
class SurfaceOptions:
    zengram_brain: str | None
    """The brain zengram serves (id or slug); None: a key's only brain, else the default one."""
    zengram_research: bool
    thoughtmcp_brain: str | None
    generator: str
    """The generator's provider name, as zengram's status reports it."""
    consolidation_schedule: str | None
    on_aws: bool


@dataclass(frozen=True)
class Options:
    limits: Limits
    http: HttpOptions
    surfaces: SurfaceOptions
    consolidate_every_s: float | None
    """`cairn serve` queues a consolidation of every brain this often; None: never."""
    warm_surfaces: bool = True
    """`cairn serve` builds the MCP surfaces in the background once it answers (mcp/warm_surfaces.py)."""
