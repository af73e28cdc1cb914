"""The service the zengram surface's tools use: zengram's API operations, in process."""

from __future__ import annotations

from dataclasses import dataclass

from cairn.container import Container
from cairn.entrypoints.mcp.kit.surface import services_of
from cairn.services.zengram.api import ZengramApi


@dataclass(frozen=True)
class ZengramServices:
    zengram: ZengramApi


def zengram_services(c: Container) -> ZengramServices:
    return services_of(ZengramServices, c)
