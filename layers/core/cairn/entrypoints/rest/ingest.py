"""Remember and ingest routes: the services the memory_remember / memory_ingest_* tools use."""

from typing import Annotated, Any, Literal, Self, get_args

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field, model_validator
from starlette.datastructures import FormData, UploadFile
from starlette.types import Message

from cairn.container import Container
from cairn.domain.errors import FileTooLarge, InvalidInput
from cairn.domain.models import Brain
from cairn.entrypoints.counted_calls import step
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.body import require_media_type
from cairn.entrypoints.rest.deps import brain_resolver, require_json
from cairn.entrypoints.wire import DocumentRecord, IngestResponse, split_tags

IngestKind = Literal["markdown", "text", "pdf", "json", "html"]
MULTIPART_SLACK = 64 * 1024  # boundaries and part headers around the file


class RememberBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, max_length=5_000_000)
    title: str | None = Field(default=None, min_length=1, max_length=512)
    tags: list[Annotated[str, Field(min_length=1, max_length=64)]] | None = Field(default=None, max_length=64)
    path: str | None = Field(default=None, min_length=1, max_length=1024)
    metadata: dict[str, str | int | float | bool | None] | None = Field(
        default=None,
        description='As the Jeffs Brain MCP wrapper sends it: `tags` comma-joined (`{"tags": "a,b"}`), '
        "taken as `tags`; no other key is stored here.",
    )

    @model_validator(mode="after")
    def _tags_from_metadata(self) -> Self:
        extra = sorted(set(self.metadata or {}) - {"tags"})
        if extra:
            raise ValueError(f"metadata takes only tags (comma-joined) here, not {', '.join(extra)}")
        joined = (self.metadata or {}).get("tags")
        if joined is None:
            return self
        if not isinstance(joined, str):
            raise ValueError("metadata.tags is the tags joined by commas, a string")
        if self.tags is not None:
            raise ValueError("give tags or metadata.tags, not both")
        self.tags = split_tags(joined)
        return self


class IngestUrlBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=8192)


_FILE_FORM_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "as": {"type": "string", "enum": list(get_args(IngestKind))},
                        "path": {"type": "string", "minLength": 1, "maxLength": 1024},
                    },
                }
            }
        },
    }
}


def ingest_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/brains/{brainId}/documents", tags=["ingest"], route_class=ScopedRoute)
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]
    ingest = container.ingest
    file_limit = container.options.limits.max_file_bytes

    @router.post("", status_code=201, dependencies=[Depends(require_json)])
    def remember(brain: BrainArg, body: RememberBody) -> DocumentRecord:
        """Store a markdown note (memory_remember); tags are kept comma-joined in metadata.tags."""
        doc = ingest.remember(brain, body.content, title=body.title, tags=body.tags, path=body.path)
        return DocumentRecord.model_validate(doc)

    @router.post(
        "/ingest/file",
        openapi_extra=_FILE_FORM_DOC,
        responses={202: {"model": IngestResponse, "description": "Queued: `job_id` finishes it"}},
    )
    async def ingest_file(brain: BrainArg, request: Request, response: Response) -> IngestResponse:
        """Upload one file (multipart field `file`, optional `as` and `path`: where to store it,
        default `ingest/<file name>`) of at most 25 MiB; a file above the queueing threshold answers
        202 `queued` with the `job_id` that finishes it."""
        require_media_type(request, "multipart/form-data")
        form = await _capped_form(request, file_limit + MULTIPART_SLACK)
        try:
            upload, kind, path = _file_fields(form)
            data = await upload.read()
        finally:
            await form.close()
        name = upload.filename or "upload"
        result = await step(
            lambda: ingest.ingest_bytes(
                brain, data, name=name, kind=kind, content_type=upload.content_type, path=path
            )
        )
        if result.status == "queued":
            response.status_code = 202
        return IngestResponse.of(result)

    @router.post("/ingest/url", dependencies=[Depends(require_json)])
    def ingest_url(brain: BrainArg, body: IngestUrlBody) -> IngestResponse:
        """Fetch a public URL and ingest its content."""
        return IngestResponse.of(ingest.ingest_url(brain, body.url))

    return router


async def _capped_form(request: Request, limit: int) -> FormData:
    """Parse the multipart body, failing with 413 file_too_large once `limit` bytes arrived."""
    too_large = FileTooLarge(f"file exceeds {limit - MULTIPART_SLACK} bytes")
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    received = 0

    async def receive() -> Message:
        nonlocal received
        message = await request.receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise too_large
        return message

    return await Request(request.scope, receive).form(max_files=1, max_fields=16)


def _file_fields(form: FormData) -> tuple[UploadFile, str | None, str | None]:
    upload = form.get("file")
    if not isinstance(upload, UploadFile):
        raise InvalidInput("multipart field 'file' (a file) is required")
    kind = form.get("as")
    if kind is not None and kind not in get_args(IngestKind):
        raise InvalidInput(f"'as' must be one of {', '.join(get_args(IngestKind))}")
    path = form.get("path")
    if path is not None and not (isinstance(path, str) and path):
        raise InvalidInput("'path' must be a non-empty document path")
    return upload, kind if isinstance(kind, str) else None, path if isinstance(path, str) else None
