"""Presigned uploads: files past API Gateway's 6 MB request limit go straight to S3, then are
ingested by key. Offered only with the S3 blob store; the embedded server answers 404 here (it
has no such limit: POST …/ingest/file takes the whole 25 MiB)."""

from typing import Annotated

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field

from cairn.container import Container
from cairn.domain.errors import NotFound
from cairn.domain.models import Brain
from cairn.entrypoints.counted_calls import step
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.deps import brain_resolver, require_json
from cairn.entrypoints.rest.ingest import IngestKind
from cairn.entrypoints.wire import IngestResponse, Timestamp
from cairn.ports.uploads import UploadSigner

NOT_OFFERED = (
    "presigned uploads are offered only with the S3 blob store (the AWS stack); "
    "this server takes files in POST /v1/brains/{brainId}/documents/ingest/file"
)


class UploadRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    file_name: str = Field(min_length=1, max_length=255)
    content_type: str | None = Field(default=None, min_length=1, max_length=255)
    size: int | None = Field(default=None, ge=0, description="Bytes; above 25 MiB is refused now")


class UploadForm(BaseModel):
    url: str
    fields: dict[str, str] = Field(description="Form fields to send before the `file` field")


class UploadTicket(BaseModel):
    model_config = ConfigDict(extra="forbid")

    upload: UploadForm
    key: str
    expires_at: Timestamp


class IngestUploadBody(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    key: str = Field(min_length=1, max_length=1024)
    as_: IngestKind | None = Field(default=None, alias="as")
    path: str | None = Field(default=None, min_length=1, max_length=1024)


def uploads_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/brains/{brainId}/documents", tags=["ingest"], route_class=ScopedRoute)
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]
    ingest = container.ingest

    def signer() -> UploadSigner:
        if container.adapters.uploads is None:
            raise NotFound(NOT_OFFERED)
        return container.adapters.uploads

    @router.post("/uploads", dependencies=[Depends(require_json)])
    def create_upload(brain: BrainArg, body: UploadRequest) -> UploadTicket:
        """A presigned S3 POST for one file of at most 25 MiB, valid for 15 minutes: send
        `upload.fields` then the file as form field `file` to `upload.url`, then ingest it with
        POST …/ingest/upload and `key`. 404 where the blob store is not S3."""
        key, post = ingest.presign_upload(brain, signer(), body.file_name, body.content_type, body.size)
        return UploadTicket(
            upload=UploadForm(url=post.url, fields=post.fields), key=key, expires_at=post.expires_at
        )

    @router.post(
        "/ingest/upload",
        dependencies=[Depends(require_json)],
        responses={202: {"model": IngestResponse, "description": "Queued: `job_id` finishes it"}},
    )
    async def ingest_upload(brain: BrainArg, body: IngestUploadBody, response: Response) -> IngestResponse:
        """Ingest a file uploaded with POST …/uploads by its `key` (optional `as` and `path`, as
        for …/ingest/file); the object is removed once ingested. A file above the queueing
        threshold answers 202 `queued` with the `job_id` that finishes it."""
        uploads = signer()
        result = await step(
            lambda: ingest.ingest_upload(brain, uploads, body.key, kind=body.as_, path=body.path)
        )
        if result.status == "queued":
            response.status_code = 202
        return IngestResponse.of(result)

    return router
