"""Jobs with live progress, knowledge gaps, API keys and erasure: the UI's operator pages."""

from __future__ import annotations

from typing import Annotated, Any, get_args

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from cairn.auth import access
from cairn.auth.principal import SCOPES
from cairn.domain.errors import InvalidInput, NotFound
from cairn.entrypoints.ui.csrf import check_csrf
from cairn.entrypoints.ui.deps import ADMIN, READ, UiDeps
from cairn.entrypoints.ui.render import UiRoute, page
from cairn.entrypoints.wire_admin import SubjectKindName

SUBJECT_KINDS = get_args(SubjectKindName)


def admin_pages(deps: UiDeps) -> APIRouter:
    router = APIRouter(route_class=UiRoute)
    container = deps.container
    keys = container.keys

    @router.get("/ui/brains/{ref}/jobs", response_class=HTMLResponse)
    def jobs(request: Request, ref: str) -> HTMLResponse:
        brain = deps.brain(ref)
        with access.needing(READ):
            listed = container.job_log.recent(brain, 50)
        return page(request, "jobs.html", brain=brain, jobs=listed, title="Jobs")

    @router.get("/ui/jobs/{job_id}/progress")
    def progress(job_id: str) -> Response:
        """One job's state as the jobs page polls it (JSON: the page's script fills the row)."""
        try:
            with access.needing(READ):
                job = container.job_status.status(job_id)
        except (NotFound, InvalidInput):
            return JSONResponse({"error": "no such job"}, status_code=404)
        body: dict[str, Any] = {
            "id": job.id,
            "status": job.status.value,
            "progress": job.progress,
            "message": job.message or "",
            "error": job.error or "",
        }
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    @router.get("/ui/brains/{ref}/gaps", response_class=HTMLResponse)
    def gaps(request: Request, ref: str) -> HTMLResponse:
        brain = deps.brain(ref)
        with access.needing(READ):
            open_gaps = container.gaps.list(brain, resolved=False, limit=100)
            resolved = container.gaps.list(brain, resolved=True, limit=20)
        return page(
            request, "gaps.html", brain=brain, open_gaps=open_gaps, resolved=resolved, title="Knowledge gaps"
        )

    @router.get("/ui/keys", response_class=HTMLResponse)
    def key_list(request: Request) -> HTMLResponse:
        with access.needing(ADMIN):
            listed = keys.list(access.tenant())
        return page(request, "keys.html", keys=listed, scopes=SCOPES, created=None, title="API keys")

    @router.post("/ui/keys", response_class=HTMLResponse)
    def create_key(
        request: Request,
        name: Annotated[str, Form(max_length=128)],
        scopes: Annotated[list[str], Form()],
        brains: Annotated[str, Form(max_length=4096)] = "",
        csrf: Annotated[str, Form(max_length=128)] = "",
    ) -> HTMLResponse:
        check_csrf(request, csrf)
        tenant = access.tenant()
        with access.needing(ADMIN):
            refs = brain_refs(brains)
            limited = container.brains.for_key(refs, tenant) if refs else None
            created = keys.create(name=name, tenant=tenant, scopes=scopes, brains=limited)
            listed = keys.list(tenant)
        deps.audit("key.create", None, created.key.id)
        return page(request, "keys.html", keys=listed, scopes=SCOPES, created=created, title="API keys")

    @router.post("/ui/keys/{key_id}/revoke")
    def revoke_key(
        request: Request, key_id: str, csrf: Annotated[str, Form(max_length=128)] = ""
    ) -> Response:
        check_csrf(request, csrf)
        with access.needing(ADMIN):
            keys.revoke(key_id, tenant=access.tenant())
        deps.audit("key.revoke", None, key_id)
        return RedirectResponse("/ui/keys", status_code=303)

    @router.get("/ui/erase", response_class=HTMLResponse)
    def erase_form(request: Request) -> HTMLResponse:
        with access.needing(ADMIN):
            recent = container.erasure.recent(20)
        return page(request, "erase.html", kinds=SUBJECT_KINDS, recent=recent, title="Erase a user or agent")

    @router.post("/ui/erase", response_class=HTMLResponse)
    def erase(
        request: Request,
        kind: Annotated[SubjectKindName, Form()],
        subject: Annotated[str, Form(min_length=1, max_length=256)],
        confirm: Annotated[str, Form(max_length=256)] = "",
        brains: Annotated[str, Form(max_length=4096)] = "",
        csrf: Annotated[str, Form(max_length=128)] = "",
    ) -> HTMLResponse:
        check_csrf(request, csrf)
        if confirm != subject:
            raise InvalidInput("type the subject again to confirm: nothing was erased")
        refs = brain_refs(brains)
        with access.needing(ADMIN):
            receipt = container.erasure.erase(kind, subject, refs)
        return page(
            request, "receipt.html", receipt=receipt, title="Erased", what=f"{kind} (named by digest only)"
        )

    return router


def brain_refs(field: str) -> list[str] | None:
    """The brains a form's field names, comma-separated; None when it is left empty (every brain).
    One that holds only commas and spaces names none: refused, never read as every brain."""
    if not field.strip():
        return None
    refs = [b.strip() for b in field.split(",") if b.strip()]
    if not refs:
        raise InvalidInput("brains names no brain: leave it empty for every brain, or name them with commas")
    return refs
