"""The canonical surface: Jeffs Brain's `memory_*` tools (seed 000), translation only.

Argument rules live in args.py and are advertised verbatim by tools/list; each tool's description
(descriptions.py) says what it does as Cairn does it; errors follow errors.py.

Where the seed contradicts itself, the pinned wire types win: memory_ingest_file (and the server
path of memory_ingest_url) return IngestResponse with `status: "completed"` (or "queued" once
ingest runs as a job), not the `'ingested'` of the tool's sketch. memory_ingest_url always takes the
server path. Paths on the wire are the brain's canonical relative paths (`memory/global/x.md`, as
the store protocol has them); the seed's leading-slash spelling is accepted on input.
memory_ingest_file's `as` also takes `html` (the server extracts HTML files too; a superset of the
Jeffs schema's four kinds, so every Jeffs call stays valid). memory_recall with a session_id returns
the session recall payload `{chunks: [...]}` (entrypoints/wire_sessions.py, docs/SESSIONS.md); its
outputSchema admits both of its shapes.
"""

from __future__ import annotations

from typing import Any

from cairn import __version__
from cairn.entrypoints.mcp.canonical.ask import MEMORY_ASK
from cairn.entrypoints.mcp.canonical.jobs import MEMORY_CONSOLIDATE, MEMORY_EXTRACT, MEMORY_REFLECT
from cairn.entrypoints.mcp.canonical.notes import (
    MEMORY_CREATE_BRAIN,
    MEMORY_INGEST_FILE,
    MEMORY_INGEST_URL,
    MEMORY_LIST_BRAINS,
    MEMORY_RECALL,
    MEMORY_REMEMBER,
    MEMORY_SEARCH,
)
from cairn.entrypoints.mcp.canonical.services import canonical_services
from cairn.entrypoints.mcp.kit import JsonToolErrors, SurfaceDecl, ToolSpec

CANONICAL_TOOLS: tuple[ToolSpec[Any], ...] = (
    MEMORY_ASK,
    MEMORY_SEARCH,
    MEMORY_RECALL,
    MEMORY_REMEMBER,
    MEMORY_INGEST_FILE,
    MEMORY_INGEST_URL,
    MEMORY_CREATE_BRAIN,
    MEMORY_LIST_BRAINS,
    MEMORY_EXTRACT,
    MEMORY_REFLECT,
    MEMORY_CONSOLIDATE,
)
"""In tools/list order."""


SURFACE = SurfaceDecl(
    "cairn",
    version=__version__,
    tools=CANONICAL_TOOLS,
    errors=JsonToolErrors(),
    services=canonical_services,
)
