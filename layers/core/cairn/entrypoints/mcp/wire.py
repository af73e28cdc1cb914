"""MCP-only wire shapes; the Jeffs types shared with REST live in cairn.entrypoints.wire."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from cairn.entrypoints.wire import IngestResponse


class IngestUrlServer(BaseModel):
    """memory_ingest_url's server path: `{path: 'server', result: IngestResponse}`."""

    path: Literal["server"] = "server"
    result: IngestResponse
