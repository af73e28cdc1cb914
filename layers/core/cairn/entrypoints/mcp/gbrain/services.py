"""The services the gbrain surface's tools use, taken from the Container once."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.container import Container
from cairn.entrypoints.mcp.kit.surface import services_of
from cairn.services.brains import BrainService
from cairn.services.documents.service import DocumentService
from cairn.services.gbrain.gaps import GapService
from cairn.services.gbrain.page_assertions import PageAssertions
from cairn.services.gbrain.page_search import PageSearch
from cairn.services.gbrain.pages import PageService
from cairn.services.gbrain.raw_data import RawDataService
from cairn.services.links.graph import GraphService
from cairn.services.search.service import SearchService


@dataclass(frozen=True)
class GbrainServices:
    brains: BrainService
    pages: PageService
    page_search: PageSearch
    graph: GraphService
    gaps: GapService
    search: SearchService
    documents: DocumentService
    assertions: PageAssertions
    raw_data: RawDataService


def gbrain_services(c: Container) -> GbrainServices:
    return services_of(GbrainServices, c, page_search=PageSearch(c.pages, c.search, c.graph, c.gaps))
