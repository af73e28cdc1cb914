"""/v1/erasures: erase a subject from everything Cairn holds, and read an erasure's receipt."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.deps import require_json
from cairn.entrypoints.wire_admin import EraseSubject, ErasureReceipt
from cairn.services.erasure.service import ErasureService

ErasureIdParam = Annotated[
    str, Path(alias="erasureId", min_length=1, max_length=64, pattern=r"^era_[0-9a-z]+$")
]


def erasure_router(erasure: ErasureService) -> APIRouter:
    router = APIRouter(prefix="/v1/erasures", tags=["admin"], route_class=ScopedRoute)

    @router.post("", dependencies=[Depends(require_json)])
    def erase_subject(body: EraseSubject) -> ErasureReceipt:
        """Erase a ThoughtMCP user, a zengram source agent, an agent scope or a session's actor
        from every surface, in the named brains or every brain the caller may erase in (their
        owner, or brains:admin); answers once it is done, with what went, counted by kind. 404
        when nothing of the subject is stored there (never, or erased already)."""
        return ErasureReceipt.of(erasure.erase(body.kind, body.subject, body.brains))

    @router.get("/{erasureId}")
    def get_erasure(erasure_id: ErasureIdParam) -> ErasureReceipt:
        """An erasure's or a brain deletion's receipt, to whoever asked for it and to admins of
        that tenant who may read every brain it names; one left running (a restart, a Lambda past
        its time) is carried to its end first."""
        return ErasureReceipt.of(erasure.receipt(erasure_id))

    return router
