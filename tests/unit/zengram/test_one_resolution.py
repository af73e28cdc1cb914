"""A zengram tool call resolves its brain once: the operation and the answer's naming of the brain
read the same one (services/zengram/base.py `one_call`); calls do not share what they resolved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import NoBrain
from cairn.entrypoints.mcp.kit import SurfaceDeps
from cairn.entrypoints.mcp.zengram import args as a
from cairn.entrypoints.mcp.zengram import tools
from cairn.entrypoints.mcp.zengram.services import zengram_services
from cairn.services.ingest.inputs import LocalFilePolicy
from tests.fakes.container import fake_container


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path)


def counted(container: Container, monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """Every resolution of a default brain the zengram service asks BrainService for."""
    asked: list[str | None] = []
    real = container.brains.resolve

    def resolve(ref: str | None) -> Any:
        asked.append(ref)
        return real(ref)

    monkeypatch.setattr(container.brains, "resolve", resolve)
    return asked


def test_a_tool_call_resolves_its_brain_once(container: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    brain = container.brains.create("Shared Brain", visibility="tenant")
    surface = SurfaceDeps(zengram_services(container), LocalFilePolicy(root=None, max_bytes=1))
    fact = {"type": "fact", "content": "The VPN is WireGuard."}
    stored = tools.store(surface, a.StoreArgs.model_validate(fact))
    assert not stored.is_error
    asked = counted(container, monkeypatch)
    found = tools.search(surface, a.SearchArgs.model_validate({"query": "which VPN do we use?"}))
    assert not found.is_error and "WireGuard" in found.content[0].text  # type: ignore[union-attr]
    assert found.meta is not None and brain.id in str(found.meta)
    assert asked == [None]
    tools.search(surface, a.SearchArgs.model_validate({"query": "which VPN do we use?"}))
    assert asked == [None, None]  # the next call resolves again: a brain made meanwhile counts


def test_a_brain_not_found_is_not_kept_so_a_first_write_makes_it(container: Container) -> None:
    api = container.zengram
    with api.one_call():
        with pytest.raises(NoBrain):
            api.brain()
        made = api.brain(create=True)
        assert api.brain().id == made.id
    assert container.brains.resolve(None).id == made.id
