"""The Jeffs Brain HTTP store protocol under /v1/brains/{brainId}/documents (PROTOCOL.md).

Reads carry `Cache-Control: no-store`; mutations answer 204 with no caching headers.
X-Tenant-Id, X-Workspace-Id, Idempotency-Key, If-Match and If-None-Match are ignored (v1.0).
On AWS a read of a document past `read_redirect_bytes` (4 MiB) answers `307` to a presigned S3 GET
of its bytes, which a Lambda response could not carry (docs/AWS.md, "Reads past 6 MB").
"""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, ConfigDict, Field

from cairn.container import Container
from cairn.domain.errors import InvalidInput
from cairn.domain.models import Brain
from cairn.domain.paths import MAX_PATH_LENGTH, validate_path
from cairn.entrypoints.counted_calls import step
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.body import (
    BINARY,
    JSON,
    OCTET_STREAM,
    json_body_doc,
    octet_body_doc,
    parse_json,
    parse_model,
    read_capped,
    require_media_type,
)
from cairn.entrypoints.rest.deps import brain_resolver, utf8_query
from cairn.entrypoints.rest.paging import NEXT_LINK, CursorParam, announce_next
from cairn.entrypoints.rest.wire import DocumentList, FileInfoRecord, FileList
from cairn.entrypoints.wire import DocumentRecord

NO_STORE = {"Cache-Control": "no-store"}
READ_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": {OCTET_STREAM: BINARY}},
    307: {
        "description": "The document is larger than this deployment's responses may carry: its bytes are "
        "at the `Location` URL (a presigned S3 GET, valid 5 minutes; send it no Authorization header)",
        "headers": {"Location": {"schema": {"type": "string"}}},
    },
}
LISTING_PARAMS = ("dir", "recursive", "include_generated", "glob")
RENAME_BODY_LIMIT = 64 * 1024

PathParam = Annotated[
    str,
    Query(
        min_length=1,
        max_length=MAX_PATH_LENGTH,
        description="Canonical relative POSIX path, e.g. memory/a.md",
    ),
]


class RenameBody(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    from_: str = Field(alias="from", min_length=1)
    to: str = Field(min_length=1)


def documents_router(container: Container) -> APIRouter:
    router = APIRouter(
        prefix="/v1/brains/{brainId}/documents",
        tags=["store"],
        route_class=ScopedRoute,
        dependencies=[Depends(utf8_query)],
    )
    BrainArg = Annotated[Brain, Depends(brain_resolver(container))]
    docs = container.documents
    limit = container.options.limits.max_put_bytes
    max_page = container.options.limits.max_list_items
    inline_max = container.options.limits.read_redirect_bytes

    @router.get("/read", response_class=Response, responses=READ_RESPONSES)
    def read_document(brain: BrainArg, path: PathParam) -> Response:
        found = docs.read_or_link(brain, path, container.adapters.downloads, inline_max=inline_max)
        if isinstance(found, bytes):
            return Response(found, media_type=OCTET_STREAM, headers=NO_STORE)
        return RedirectResponse(found.url, status_code=307, headers=NO_STORE)

    @router.head("", response_class=Response)
    def head_document(brain: BrainArg, path: PathParam) -> Response:
        docs.stat(brain, path)  # a folder exists as stat says it does; NotFound otherwise
        return Response(status_code=200, headers=NO_STORE)

    @router.get("/stat")
    def stat_document(brain: BrainArg, path: PathParam, response: Response) -> FileInfoRecord:
        response.headers.update(NO_STORE)
        return FileInfoRecord.model_validate(docs.stat(brain, path))

    @router.get("", response_model=FileList | DocumentList, responses=NEXT_LINK)
    def list_documents(
        brain: BrainArg,
        request: Request,
        response: Response,
        dir: Annotated[
            str, Query(max_length=MAX_PATH_LENGTH, description="Directory; empty means the brain root")
        ] = "",
        recursive: bool = False,
        include_generated: bool = False,
        glob: Annotated[
            str | None, Query(max_length=MAX_PATH_LENGTH, description="Shell pattern over base names")
        ] = None,
        limit: Annotated[
            int | None, Query(ge=1, le=max_page, description=f"Page size (default {max_page})")
        ] = None,
        cursor: CursorParam = None,
    ) -> FileList | DocumentList:
        """Path listing; with none of dir/recursive/include_generated/glob, the legacy document listing.
        Paged: while more follows, the body's `next_cursor` and a Link rel="next" header say so."""
        response.headers.update(NO_STORE)
        if not any(p in request.query_params for p in LISTING_PARAMS):
            legacy = docs.documents_page(brain, limit=limit, cursor=cursor)
            announce_next(request, response, legacy.next_cursor)
            return DocumentList(
                items=[DocumentRecord.model_validate(d) for d in legacy.items], next_cursor=legacy.next_cursor
            )
        page = docs.list_page(
            brain,
            dir,
            recursive=recursive,
            glob=glob,
            include_generated=include_generated,
            limit=limit,
            cursor=cursor,
        )
        announce_next(request, response, page.next_cursor)
        return FileList(
            items=[FileInfoRecord.model_validate(i) for i in page.items], next_cursor=page.next_cursor
        )

    @router.put("", status_code=204, response_class=Response, openapi_extra=octet_body_doc(limit))
    async def put_document(brain: BrainArg, path: PathParam, request: Request) -> Response:
        data = await _raw_body(request, path, limit)
        await step(lambda: docs.write(brain, path, data))
        return Response(status_code=204)

    @router.post("/append", status_code=204, response_class=Response, openapi_extra=octet_body_doc(limit))
    async def append_document(brain: BrainArg, path: PathParam, request: Request) -> Response:
        data = await _raw_body(request, path, limit)
        await step(lambda: docs.append(brain, path, data))
        return Response(status_code=204)

    @router.delete("", status_code=204, response_class=Response)
    def delete_document(
        brain: BrainArg,
        path: Annotated[
            str | None,
            Query(
                min_length=1,
                max_length=MAX_PATH_LENGTH,
                description="Path to delete (the deprecated `id` is still accepted instead)",
            ),
        ] = None,
        doc_id: Annotated[str | None, Query(alias="id", description="Legacy: document id")] = None,
    ) -> Response:
        """Delete by path; without `path`, the legacy delete by document `id`."""
        if path is not None:
            docs.delete(brain, path)
        elif doc_id:
            docs.delete(brain, docs.get_by_id(brain, doc_id).path)
        else:
            raise InvalidInput("query parameter 'path' (or legacy 'id') is required")
        return Response(status_code=204)

    @router.post("/rename", status_code=204, response_class=Response, openapi_extra=json_body_doc(RenameBody))
    async def rename_document(brain: BrainArg, request: Request) -> Response:
        require_media_type(request, JSON)
        body = parse_model(RenameBody, parse_json(await read_capped(request, RENAME_BODY_LIMIT)))
        await step(lambda: docs.rename(brain, body.from_, body.to))
        return Response(status_code=204)

    return router


async def _raw_body(request: Request, path: str, limit: int) -> bytes:
    """415 before 400 before 413: media type, then the path, then the capped body."""
    require_media_type(request, OCTET_STREAM)
    validate_path(path)
    return await read_capped(request, limit)
