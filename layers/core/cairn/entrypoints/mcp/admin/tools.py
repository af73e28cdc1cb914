"""The admin surface's tools: who owns a brain and who else may see it; deleting a brain and erasing
a subject from everything Cairn holds."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp_types import CallToolResult
from pydantic import Field

from cairn.auth.principal import ADMIN, READ
from cairn.entrypoints.mcp.admin.services import AdminServices
from cairn.entrypoints.mcp.kit import AuditTarget, SurfaceDeps, ToolArgs, ToolSpec, ok_result
from cairn.entrypoints.wire_admin import (
    BrainAccess,
    BrainAccessList,
    ErasureReceipt,
    Principal,
    SubjectKindName,
)


class NoArgs(ToolArgs):
    pass


class UpdateBrainArgs(ToolArgs):
    brain: Annotated[str, Field(min_length=1, description="Brain id or slug.")]
    visibility: Annotated[
        Literal["private", "tenant", "public"] | None,
        Field(description="private: its owner only; tenant: its tenant; public: anyone may read."),
    ] = None
    owner: Annotated[Principal | None, Field(description="The subject that owns it from now on.")] = None


class DeleteBrainArgs(ToolArgs):
    brain: Annotated[str, Field(min_length=1, max_length=128, description="Brain id or slug.")]


class EraseSubjectArgs(ToolArgs):
    kind: Annotated[SubjectKindName, Field(description="What `subject` names.")]
    subject: Annotated[
        str, Field(min_length=1, max_length=256, description="The ThoughtMCP userId, agent or actor.")
    ]
    brains: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=128)]] | None,
        Field(
            min_length=1,
            max_length=100,
            description="Brain ids or slugs; default every one you may erase in.",
        ),
    ] = None


def list_brains(deps: SurfaceDeps[AdminServices], _: NoArgs) -> CallToolResult:
    listed = BrainAccessList(items=[BrainAccess.model_validate(b) for b in deps.services.brains.list()])
    lines = [f"{b.slug}: {b.visibility}, owner {b.owner_tenant}/{b.owner or '*'}" for b in listed.items]
    return ok_result("\n".join(lines) or "No brains.", listed)


def update_brain(deps: SurfaceDeps[AdminServices], a: UpdateBrainArgs) -> CallToolResult:
    brain = BrainAccess.model_validate(
        deps.services.brains.update(a.brain, visibility=a.visibility, owner=a.owner)
    )
    return ok_result(f"{brain.slug}: {brain.visibility}, owner {brain.owner_tenant}/{brain.owner}", brain)


def updated_brain(_: UpdateBrainArgs, result: CallToolResult) -> AuditTarget:
    """The brain the call changed, by the id in its result (the caller may no longer see it)."""
    assert result.structured_content is not None
    return AuditTarget(brain_id=str(result.structured_content["id"]))


def delete_brain(deps: SurfaceDeps[AdminServices], a: DeleteBrainArgs) -> CallToolResult:
    receipt = ErasureReceipt.of(deps.services.erasure.delete_brain(a.brain))
    return ok_result(f"deleted brain {receipt.brains[0]}: {_counted(receipt)}", receipt)


def erase_subject(deps: SurfaceDeps[AdminServices], a: EraseSubjectArgs) -> CallToolResult:
    receipt = ErasureReceipt.of(deps.services.erasure.erase(a.kind, a.subject, a.brains))
    return ok_result(f"erased ({receipt.id}): {_counted(receipt)}", receipt)


def _counted(receipt: ErasureReceipt) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in receipt.removed.items() if n) or "nothing"


def receipt_target(_: object, result: CallToolResult) -> AuditTarget:
    """The erasure's receipt id: the audit never records whose data went."""
    assert result.structured_content is not None
    return AuditTarget(target=str(result.structured_content["id"]))


ADMIN_LIST_BRAINS = ToolSpec(
    name="admin_list_brains",
    description="List the brains the caller may see, with their owner and visibility.",
    args=NoArgs,
    output=BrainAccessList,
    scope=READ,
    handler=list_brains,
)

ADMIN_UPDATE_BRAIN = ToolSpec(
    name="admin_update_brain",
    description="Change a brain's visibility or owning subject (needs brains:admin on the brain).",
    args=UpdateBrainArgs,
    output=BrainAccess,
    scope=ADMIN,
    handler=update_brain,
    audit=updated_brain,
)

ADMIN_DELETE_BRAIN = ToolSpec(
    name="admin_delete_brain",
    description=(
        "Delete a brain and everything it holds, on every surface (needs brains:admin on the brain). "
        "Returns a receipt counting what was removed."
    ),
    args=DeleteBrainArgs,
    output=ErasureReceipt,
    scope=ADMIN,
    handler=delete_brain,
    audit=receipt_target,
    destructive=True,
)

ADMIN_ERASE_SUBJECT = ToolSpec(
    name="admin_erase_subject",
    description=(
        "Erase a ThoughtMCP user, a zengram source agent, an agent scope or a session's actor from "
        "everything Cairn holds (records, blobs, chunks, vectors, links, entities, sessions; audit "
        "entries redacted), in the named brains or every brain you may erase in. Returns a receipt "
        "counting what was removed by kind; not_found when nothing of the subject is stored."
    ),
    args=EraseSubjectArgs,
    output=ErasureReceipt,
    scope=ADMIN,
    handler=erase_subject,
    audit=receipt_target,
    destructive=True,
)
