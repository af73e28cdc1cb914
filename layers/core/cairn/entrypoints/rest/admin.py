"""/v1/admin: API keys and the audit log of the caller's own tenant (brains:admin)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from cairn.auth import access
from cairn.auth.api_keys import ApiKey
from cairn.auth.principal import SCOPES
from cairn.container import Container
from cairn.entrypoints.rest.authz import ScopedRoute
from cairn.entrypoints.rest.deps import require_json
from cairn.entrypoints.rest.paging import NEXT_LINK, announce_next
from cairn.entrypoints.wire import Timestamp, Wire
from cairn.services.audit import AuditEntry

KeyIdParam = Annotated[str, Path(alias="keyId", min_length=1, max_length=64)]
ScopeName = Annotated[str, Field(json_schema_extra={"enum": list(SCOPES)})]  # checked by ApiKeys.create


class CreateKey(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    scopes: list[ScopeName] = Field(min_length=1, max_length=len(SCOPES))
    brains: list[str] | None = Field(default=None, min_length=1, max_length=1000)


class KeyRecord(Wire):
    id: str
    name: str
    tenant: str
    scopes: list[str]
    brains: list[str] | None = None
    last4: str
    created_at: Timestamp
    revoked_at: Timestamp | None = None

    @classmethod
    def of(cls, key: ApiKey) -> KeyRecord:
        fields = key.model_dump(include=set(cls.model_fields))
        return cls.model_validate(fields)


class CreatedKeyRecord(KeyRecord):
    key: str  # shown once


class KeyList(Wire):
    items: list[KeyRecord]


class AuditPage(Wire):
    items: list[AuditEntry]
    next_cursor: str | None = None


def admin_router(container: Container) -> APIRouter:
    router = APIRouter(prefix="/v1/admin", tags=["admin"], route_class=ScopedRoute)
    keys = container.keys

    @router.post("/keys", status_code=201, dependencies=[Depends(require_json)])
    def create_key(request: Request, body: CreateKey) -> CreatedKeyRecord:
        """An API key for the caller's tenant; `brains` limits it to those brains. Shown once."""
        tenant = access.tenant()
        brains = container.brains.for_key(body.brains, tenant) if body.brains else None
        created = keys.create(name=body.name, tenant=tenant, scopes=body.scopes, brains=brains)
        request.state.audit_target = created.key.id  # the audit entry names the key made, never its secret
        return CreatedKeyRecord(**KeyRecord.of(created.key).model_dump(), key=created.plaintext)

    @router.get("/keys")
    def list_keys() -> KeyList:
        return KeyList(items=[KeyRecord.of(k) for k in keys.list(access.tenant())])

    @router.delete("/keys/{keyId}")
    def revoke_key(key_id: KeyIdParam) -> KeyRecord:
        return KeyRecord.of(keys.revoke(key_id, tenant=access.tenant()))  # another tenant's: not found

    @router.get("/audit", responses=NEXT_LINK)
    def audit(
        brain: Annotated[str | None, Query(max_length=128)] = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        cursor: Annotated[str | None, Query(max_length=512)] = None,
        *,
        request: Request,
        response: Response,
    ) -> AuditPage:
        """Mutations in the caller's tenant, newest first (a brain's, when `brain` is given).
        `next_cursor` (also a Link rel="next" header) is set while older entries remain."""
        brain_id = container.brains.get(brain).id if brain else None
        entries, after = container.audit.query(
            tenant=access.tenant(),
            brain_id=brain_id,
            since=since,
            until=until,
            limit=limit,
            after=cursor,
            visible=container.brains.audit_visibility(),
        )
        announce_next(request, response, after)
        return AuditPage(items=entries, next_cursor=after)

    return router
