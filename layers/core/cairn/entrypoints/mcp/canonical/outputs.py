"""The canonical tools' MCP-only output shapes; the Jeffs types shared with REST live in
cairn.entrypoints.wire*."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from cairn.entrypoints.wire import IngestResponse, SearchResponse
from cairn.entrypoints.wire_memory import ExtractSessionResult, ExtractTranscriptResult
from cairn.entrypoints.wire_sessions import SessionRecallResponse


class IngestUrlServer(BaseModel):
    """memory_ingest_url's server path: `{path: 'server', result: IngestResponse}`."""

    path: Literal["server"] = "server"
    result: IngestResponse


class RecallOutput(RootModel[SearchResponse | SessionRecallResponse]):
    """memory_recall's structuredContent: SearchResponse without session_id, `{chunks}` with one."""

    model_config = ConfigDict(json_schema_extra={"type": "object"})


class ExtractOutput(RootModel[ExtractSessionResult | ExtractTranscriptResult]):
    model_config = ConfigDict(json_schema_extra={"type": "object"})


class AskCitationEvent(BaseModel):
    type: Literal["citation"] = "citation"
    chunk_id: str
    document_id: str
    brain: str  # the slug of the brain the quoted passage came from (Cairn's addition)
    answer_start: int = Field(ge=0)
    answer_end: int = Field(ge=0)
    quote: str


class RetrievedChunk(BaseModel):
    chunk_id: str
    document_id: str
    brain: str  # the slug of the brain the chunk came from (Cairn's addition)
    score: float
    preview: str = Field(max_length=512)


class AskResult(BaseModel):
    answer: str
    citations: list[AskCitationEvent]
    retrieved: list[RetrievedChunk]
