"""/ui: the brains the caller may read, with what each surface calls them; create and delete."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from cairn.auth import access
from cairn.domain.errors import InvalidInput
from cairn.entrypoints.ui.csrf import check_csrf
from cairn.entrypoints.ui.deps import ADMIN, READ, UiDeps
from cairn.entrypoints.ui.render import UiRoute, page
from cairn.services.brains import BrainService

PER_PAGE = 50


def brain_pages(deps: UiDeps) -> APIRouter:
    router = APIRouter(route_class=UiRoute)
    container = deps.container

    @router.get("/ui", response_class=HTMLResponse)
    def brains(request: Request, cursor: str | None = None) -> HTMLResponse:
        with access.needing(READ):
            listed, after = container.brains.page(limit=PER_PAGE, cursor=cursor)
            zengram, thoughtmcp = deps.defaults()
            summaries = [
                deps.overview.summary(b, zengram_brain=zengram, thoughtmcp_brain=thoughtmcp) for b in listed
            ]
        return page(request, "brains.html", summaries=summaries, next_cursor=after, title="Brains")

    @router.post("/ui/brains")
    def create(
        request: Request,
        name: Annotated[str, Form(max_length=128)],
        csrf: Annotated[str, Form(max_length=128)] = "",
        slug: Annotated[str, Form(max_length=64)] = "",
        visibility: Annotated[Literal["private", "tenant", "public"], Form()] = "private",
    ) -> Response:
        check_csrf(request, csrf)
        with access.needing(ADMIN):
            brain = container.brains.create(name, slug=slug.strip() or None, visibility=visibility)
        deps.audit("brain.create", brain.id)
        return RedirectResponse(f"/ui/brains/{BrainService.ref_of(brain)}", status_code=303)

    @router.get("/ui/brains/{ref}/delete", response_class=HTMLResponse)
    def confirm_delete(request: Request, ref: str) -> HTMLResponse:
        brain = deps.brain(ref, ADMIN)
        zengram, thoughtmcp = deps.defaults()
        summary = deps.overview.summary(brain, zengram_brain=zengram, thoughtmcp_brain=thoughtmcp)
        return page(request, "brain_delete.html", summary=summary, brain=brain, title=f"Delete {brain.slug}")

    @router.post("/ui/brains/{ref}/delete", response_class=HTMLResponse)
    def delete(
        request: Request,
        ref: str,
        confirm: Annotated[str, Form(max_length=128)] = "",
        csrf: Annotated[str, Form(max_length=128)] = "",
    ) -> HTMLResponse:
        check_csrf(request, csrf)
        brain = deps.brain(ref, ADMIN)
        if confirm.strip() != brain.slug:
            raise InvalidInput(f"type the brain's slug, {brain.slug}, to confirm: nothing was deleted")
        with access.needing(ADMIN):
            receipt = container.erasure.delete_brain(brain.id)
        return page(
            request, "receipt.html", receipt=receipt, title="Brain deleted", what=f"brain {brain.slug}"
        )

    return router
