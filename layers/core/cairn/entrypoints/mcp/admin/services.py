"""The services the admin surface's tools use, taken from the Container once."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.container import Container
from cairn.entrypoints.mcp.kit.surface import services_of
from cairn.services.brains import BrainService
from cairn.services.erasure.service import ErasureService


@dataclass(frozen=True)
class AdminServices:
    brains: BrainService
    erasure: ErasureService


def admin_services(c: Container) -> AdminServices:
    return services_of(AdminServices, c)
