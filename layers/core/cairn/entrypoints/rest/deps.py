"""Dependencies shared by the /v1 routers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Path, Request

from cairn.container import Container
from cairn.domain.models import Brain
from cairn.entrypoints.rest.body import JSON, require_media_type

BrainIdParam = Annotated[str, Path(alias="brainId", description="Brain id (brn_...) or slug")]


def brain_resolver(container: Container) -> Callable[[str, Request], Brain]:
    """`{brainId}` accepts an id or a slug everywhere; unknown brains are 404 not_found. The brain
    is kept on the request for the audit record (rest/authz.py)."""

    def brain(brain_id: BrainIdParam, request: Request) -> Brain:
        resolved = container.brains.get(brain_id)
        request.state.brain = resolved
        return resolved

    return brain


def require_json(request: Request) -> None:
    """Runs before the body is validated, so a wrong Content-Type is 415, not 400."""
    require_media_type(request, JSON)
