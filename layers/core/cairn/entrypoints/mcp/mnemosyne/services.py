"""The services the Mnemosyne surface's tools use, taken from the Container once."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.container import Container
from cairn.entrypoints.mcp.kit.surface import services_of
from cairn.services.health import HealthService
from cairn.services.mnemosyne.libraries import LibraryService
from cairn.services.mnemosyne.library_search import LibrarySearch


@dataclass(frozen=True)
class MnemosyneServices:
    libraries: LibraryService
    library_search: LibrarySearch
    health: HealthService


def mnemosyne_services(c: Container) -> MnemosyneServices:
    return services_of(MnemosyneServices, c)
