"""/ui/brains/{ref}: a brain's items, filtered and paged; one item in full; edit and delete."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Annotated, cast

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from cairn.auth import access
from cairn.domain.errors import InvalidInput
from cairn.entrypoints.ui.csrf import check_csrf
from cairn.entrypoints.ui.deps import READ, WRITE, UiDeps
from cairn.entrypoints.ui.render import UiRoute, page
from cairn.services.brains import BrainService
from cairn.services.explorer.edits import ItemEdits
from cairn.services.explorer.items import VALIDITIES, ItemFilter, Validity
from cairn.services.explorer.kinds import ITEM_KINDS, ItemKind, kind_of, type_of
from cairn.services.explorer.overview import thought_users
from cairn.services.mnemosyne.libraries import Library

Text = Annotated[str, Query(max_length=256)]


def _day(value: str | None, name: str) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.combine(date.fromisoformat(value), time(), tzinfo=UTC)
    except ValueError:
        raise InvalidInput(f"{name} is a day, YYYY-MM-DD") from None


def item_pages(deps: UiDeps) -> APIRouter:
    router = APIRouter(route_class=UiRoute)
    container = deps.container
    edits = ItemEdits(container.documents, container.memories, container.thoughts)

    @router.get("/ui/brains/{ref}", response_class=HTMLResponse)
    def items(
        request: Request,
        ref: str,
        kind: Text = "",
        type: Text = "",
        tag: Text = "",
        since: Text = "",
        until: Text = "",
        validity: Text = "current",
        prefix: Text = "",
        cursor: Annotated[str | None, Query(max_length=2048)] = None,
    ) -> HTMLResponse:
        brain = deps.brain(ref)
        if kind and kind not in ITEM_KINDS:
            raise InvalidInput(f"kind is one of {', '.join(ITEM_KINDS)}")
        if validity not in VALIDITIES:
            raise InvalidInput(f"validity is one of {', '.join(VALIDITIES)}")
        flt = ItemFilter(
            kind=cast(ItemKind, kind) if kind else None,
            type=type.strip() or None,
            tag=tag.strip() or None,
            since=_day(since, "since"),
            until=_day(until, "until"),
            validity=cast(Validity, validity),
            prefix=prefix,
        )
        with access.needing(READ):
            listed = deps.listing.page(brain, flt, cursor=cursor)
            users, more_users = thought_users(container.documents, brain) if not cursor else ([], False)
            collections = container.libraries.collections([Library(brain)]) if not cursor else []
        rows = [(d, kind_of(d), type_of(d)) for d in listed.items]
        filters = {
            "kind": kind,
            "type": type,
            "tag": tag,
            "since": since,
            "until": until,
            "validity": validity,
            "prefix": prefix,
        }
        return page(
            request,
            "items.html",
            brain=brain,
            rows=rows,
            listed=listed,
            filters=filters,
            kinds=ITEM_KINDS,
            validities=VALIDITIES,
            users=users,
            collections=collections,
            more_users=more_users,
            title=brain.name,
        )

    @router.get("/ui/brains/{ref}/items/{doc_id}", response_class=HTMLResponse)
    def item(request: Request, ref: str, doc_id: str) -> HTMLResponse:
        brain = deps.brain(ref)
        with access.needing(READ):
            detail = deps.details.detail(brain, doc_id)
        doc = detail.doc
        return page(
            request,
            "item.html",
            brain=brain,
            d=detail,
            kind=kind_of(doc),
            type=type_of(doc),
            title=doc.title or doc.path,
            may_edit=access.offers_change(brain, doc.owner),
        )

    @router.post("/ui/brains/{ref}/items/{doc_id}/edit")
    def edit(
        request: Request,
        ref: str,
        doc_id: str,
        text: Annotated[str, Form(max_length=5_000_000)],
        version: Annotated[int, Form(ge=0)],
        csrf: Annotated[str, Form(max_length=128)] = "",
    ) -> Response:
        check_csrf(request, csrf)
        brain = deps.brain(ref, WRITE)
        with access.needing(WRITE):
            doc = deps.details.item(brain, doc_id)
            edits.edit(brain, doc, text.replace("\r\n", "\n"), version=version)
        deps.audit("item.edit", brain.id, doc.path)
        return RedirectResponse(f"/ui/brains/{BrainService.ref_of(brain)}/items/{doc_id}", status_code=303)

    @router.get("/ui/brains/{ref}/items/{doc_id}/delete", response_class=HTMLResponse)
    def confirm_delete(request: Request, ref: str, doc_id: str) -> HTMLResponse:
        brain = deps.brain(ref, WRITE)
        with access.needing(WRITE):
            doc = deps.details.item(brain, doc_id)
            access.check_change(brain, doc.owner, "this item")
        return page(request, "item_delete.html", brain=brain, doc=doc, kind=kind_of(doc), title="Delete item")

    @router.post("/ui/brains/{ref}/items/{doc_id}/delete")
    def delete(
        request: Request, ref: str, doc_id: str, csrf: Annotated[str, Form(max_length=128)] = ""
    ) -> Response:
        check_csrf(request, csrf)
        brain = deps.brain(ref, WRITE)
        with access.needing(WRITE):
            doc = deps.details.item(brain, doc_id)
            edits.delete(brain, doc)
        deps.audit("item.delete", brain.id, doc.path)
        return RedirectResponse(f"/ui/brains/{BrainService.ref_of(brain)}?deleted=1", status_code=303)

    return router
