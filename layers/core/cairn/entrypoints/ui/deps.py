"""What the UI's pages read, built once per app from the container."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, WRITE
from cairn.container import Container
from cairn.domain.errors import CairnError
from cairn.domain.models import Brain
from cairn.services.explorer.detail import ItemDetails
from cairn.services.explorer.items import ItemListing
from cairn.services.explorer.neighbourhood import Neighbourhoods
from cairn.services.explorer.overview import BrainOverview


@dataclass(frozen=True)
class UiDeps:
    container: Container
    overview: BrainOverview
    listing: ItemListing
    details: ItemDetails
    graphs: Neighbourhoods

    @classmethod
    def of(cls, c: Container) -> UiDeps:
        repo = c.documents.repo
        return cls(
            container=c,
            overview=BrainOverview(repo, c.adapters.chunks),
            listing=ItemListing(repo),
            details=ItemDetails(
                repo,
                c.documents,
                c.search.chunks,
                c.entities.links,
                c.search.access,  # None when accesses are not counted: every item reads 0
                c.entities.repo,
            ),
            graphs=Neighbourhoods(repo, c.entities.repo, c.search.chunks),
        )

    def brain(self, ref: str, scope: str = READ) -> Brain:
        with access.needing(scope):
            return self.container.brains.get(ref)

    def defaults(self) -> tuple[str | None, str | None]:
        """The brains zengram serves and ThoughtMCP keeps its memories in, for this caller (None:
        none yet, or, for ThoughtMCP, not configured: its brain is then the one marked)."""
        surfaces = self.container.options.surfaces

        def resolved(ref: str | None) -> str | None:
            try:
                return self.container.brains.resolve(ref).id
            except CairnError:
                return None

        thoughtmcp = resolved(surfaces.thoughtmcp_brain) if surfaces.thoughtmcp_brain else None
        return resolved(surfaces.zengram_brain), thoughtmcp

    def audit(self, action: str, brain_id: str | None, target: str | None = None) -> None:
        current = access.current()
        self.container.audit.record(
            current.principal if current else None, f"ui.{action}", brain_id=brain_id, target=target
        )


__all__ = ["ADMIN", "READ", "WRITE", "UiDeps"]
