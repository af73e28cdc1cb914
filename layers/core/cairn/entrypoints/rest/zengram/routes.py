"""zengram's HTTP API under /zengram: the routes its published MCP wrapper calls.

Every answer is JSON with an `x-request-id` header (the caller's, or a fresh one); errors are
`{"error": "..."}` with zengram's statuses, a route that does not exist included. Callers
authenticate with `x-api-key` (a Cairn API key, or any other Cairn credential;
entrypoints/auth_http.py); `GET /zengram/health` is open. A write that succeeds is recorded in the
audit log as `zengram.<route>` (brain, memory id), as the /v1 routes and the MCP tools are, in the
worker thread that did it, before its answer goes out.

A name or id in the path may contain "/", sent as `%2F` (the wrapper encodes it so). The server
decodes the path before routing, so those routes take the rest of the path; an entity's route
reads the undecoded path where the server keeps it (uvicorn does, Mangum does not), so that a
name ending in "/memories" is told apart from its memories route. Those path parameters take any
character, a line break too (`text`), as Express's do: Starlette's `path` stops at one, and the
request would miss every route and get the framework's 404 rather than zengram's.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from fastapi import APIRouter, Request
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.responses import JSONResponse, Response

from cairn.auth import access
from cairn.auth.principal import READ, WRITE
from cairn.domain import json_input
from cairn.domain.echo import safe_echo
from cairn.domain.errors import CairnError, InvalidInput, NoBrain, storage_failure
from cairn.entrypoints.counted_calls import CountedRoute, step
from cairn.services.audit import AuditLog
from cairn.services.zengram.api import ZengramApi
from cairn.services.zengram.reply import Reply, refusal, run
from cairn.services.zengram.validate import Refused

PREFIX = "/zengram"

log = logging.getLogger("cairn.audit")


class _Text(PathConvertor):
    regex = r"[\s\S]*"


register_url_convertor("text", _Text())


def answer(reply: Reply, request_id: str) -> Response:
    body = reply.body
    if reply.status >= 400 and isinstance(body, dict) and isinstance(body.get("error"), str):
        body = {**body, "error": safe_echo(body["error"])}  # it may quote the caller's input
    return JSONResponse(body, status_code=reply.status, headers={**reply.headers, "x-request-id": request_id})


async def _json(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        return json_input.loads(raw)
    except InvalidInput as exc:
        raise Refused(400, "Invalid JSON body" if "not valid JSON" in exc.message else exc.message) from None


def zengram_router(api: ZengramApi, audit: AuditLog) -> APIRouter:
    router = APIRouter(prefix=PREFIX, include_in_schema=False, route_class=CountedRoute)

    def audited(request: Request, reply: Reply) -> None:
        """Record a write that succeeded (the caller's principal, its brain, the memory it named
        or made); a brain no longer resolvable, or the log refusing, leaves the write answered."""
        current = access.current()
        if current is None or not 200 <= reply.status < 300:
            return
        route = request.scope.get("route")
        name = str(getattr(route, "name", None) or "route")
        made = reply.body.get("id") if request.method == "POST" else None
        target = request.path_params.get("memory_id") or made
        try:
            brain_id = api.brain().id
            audit.record(
                current.principal,
                f"zengram.{name}",
                brain_id=brain_id,
                target=str(target) if target else None,
                detail={"route": f"{request.method} {getattr(route, 'path', '')}"},
            )
        except NoBrain:
            log.info("audit of zengram %s skipped: no brain", name)
        except CairnError:  # the write happened; say so loudly rather than fail its answer
            log.exception("audit record failed for zengram %s", name)

    async def respond(
        request: Request, op: Callable[[Any], Reply], *, with_body: bool = False, scope: str | None = None
    ) -> Response:
        """Run `op` with the scope it needs: by its method (reads documents:read, writes
        documents:write) unless given; reflect and research are POSTs that only read. A write
        that succeeds is audited before its answer is made."""
        request_id = request.headers.get("x-request-id") or str(uuid.uuid4())
        try:
            body = await _json(request) if with_body else None
        except Refused as exc:
            return answer(refusal(exc), request_id)
        scope = scope or (READ if request.method in ("GET", "HEAD") else WRITE)

        def scoped() -> Reply:
            with access.needing(scope):
                try:
                    return op(body)
                except Exception as exc:  # a full disk, a damaged database: zengram's 503, not a 500
                    known = storage_failure(exc)
                    if known is None or known is exc:
                        raise
                    raise known from exc

        def done() -> Reply:
            with api.one_call():  # the brain the write used is the one its entry names
                reply = run(scoped)
                if scope != READ:
                    audited(request, reply)
            return reply

        reply = await step(done)
        return answer(reply, request_id)

    def params(request: Request) -> dict[str, str]:
        return dict(request.query_params)

    @router.get("/health")
    async def health(request: Request) -> Response:
        return await respond(request, lambda _: api.health())

    @router.post("/memory")
    async def store(request: Request) -> Response:
        return await respond(request, api.store, with_body=True)

    @router.get("/memory/search")
    async def search(request: Request) -> Response:
        return await respond(request, lambda _: api.search(params(request)))

    @router.get("/memory/query")
    async def query(request: Request) -> Response:
        return await respond(request, lambda _: api.query(params(request)))

    @router.patch("/memory/{memory_id:text}")
    async def update(memory_id: str, request: Request) -> Response:
        return await respond(request, lambda body: api.update(memory_id, body), with_body=True)

    @router.delete("/memory/{memory_id:text}")
    async def delete(memory_id: str, request: Request) -> Response:
        return await respond(request, lambda body: api.delete(memory_id, body), with_body=True)

    @router.get("/briefing")
    async def briefing(request: Request) -> Response:
        return await respond(request, lambda _: api.briefing(params(request)))

    @router.get("/stats")
    async def stats(request: Request) -> Response:
        return await respond(request, lambda _: api.stats())

    @router.get("/entities")
    async def entities(request: Request) -> Response:
        return await respond(request, lambda _: api.entities(params(request)))

    @router.get("/entities/stats")
    async def entity_stats(request: Request) -> Response:
        return await respond(request, lambda _: api.entity_stats())

    async def entity_route(request: Request, name: str, *, memories: bool) -> Response:
        name, memories = _entity_path(request, name, memories)
        if memories:
            return await respond(request, lambda _: api.entity_memories(name, params(request)))
        return await respond(request, lambda _: api.entity(name))

    @router.get("/entities/{name:text}/memories")
    async def entity_memories(name: str, request: Request) -> Response:
        return await entity_route(request, name, memories=True)

    @router.get("/entities/{name:text}")
    async def entity(name: str, request: Request) -> Response:
        return await entity_route(request, name, memories=False)

    @router.post("/consolidate")
    async def consolidate(request: Request) -> Response:
        return await respond(request, lambda _: api.consolidate(params(request)))

    @router.get("/consolidate/status")
    async def consolidation_status(request: Request) -> Response:
        return await respond(request, lambda _: api.consolidation_status())

    @router.get("/consolidate/job/{job_id:text}")
    async def consolidation_job(job_id: str, request: Request) -> Response:
        return await respond(request, lambda _: api.consolidation_job(job_id))

    @router.get("/export")
    async def export(request: Request) -> Response:
        return await respond(request, lambda _: api.export(params(request)))

    @router.post("/export/import")
    async def restore(request: Request) -> Response:
        return await respond(request, lambda body: api.import_(body, params(request)), with_body=True)

    @router.post("/reflect")
    async def reflect(request: Request) -> Response:
        return await respond(request, api.reflect, with_body=True, scope=READ)

    @router.post("/research")
    async def research(request: Request) -> Response:
        return await respond(request, api.research, with_body=True, scope=READ)

    @router.api_route("/{rest:text}", methods=list(_METHODS))
    async def unmatched(rest: str, request: Request) -> Response:
        """Any other path or method: Express's 404, in zengram's error body."""
        request_id = request.headers.get("x-request-id") or str(uuid.uuid4())
        return answer(Reply(404, {"error": f"Cannot {request.method} /{rest}"}), request_id)

    return router


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_ENTITIES = "/entities/"
_MEMORIES = "/memories"


def _entity_path(request: Request, routed: str, memories: bool) -> tuple[str, bool]:
    """The entity's name, and whether its memories are asked for: read from the undecoded path
    when the server keeps it, where an encoded "/" is still part of the name; else as routed."""
    raw = request.scope.get("raw_path")
    if not isinstance(raw, bytes) or _ENTITIES.encode() not in raw:
        return routed, memories
    tail = raw.split(b"?", 1)[0].split(_ENTITIES.encode(), 1)[1].decode("latin-1")
    asked = tail.endswith(_MEMORIES)
    return unquote(tail.removesuffix(_MEMORIES) if asked else tail), asked
