"""memory_remember's tags are forwarded comma-joined and read back split: the 64-tag limit counts
the distinct tags left once repeats are dropped, not the pieces the split made."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import InvalidInput
from cairn.entrypoints.mcp.canonical.args import RememberArgs
from cairn.entrypoints.mcp.canonical.notes import remember
from cairn.entrypoints.mcp.canonical.services import CanonicalServices, canonical_services
from cairn.entrypoints.mcp.kit import SurfaceDeps
from cairn.services.ingest.inputs import MAX_TAGS, LocalFilePolicy
from tests.fakes.container import fake_container


@pytest.fixture
def surface(tmp_path: Path) -> SurfaceDeps[CanonicalServices]:
    container: Container = fake_container(tmp_path)
    container.brains.create("Notes")
    return SurfaceDeps(canonical_services(container), LocalFilePolicy(root=None, max_bytes=1))


def remembered(surface: SurfaceDeps[CanonicalServices], tags: list[str]) -> list[str]:
    args = RememberArgs.model_validate({"content": "The heron wades at dawn.", "tags": tags})
    result = remember(surface, args)
    assert not result.is_error
    held = (result.structured_content or {}).get("metadata", {}).get("tags")
    return held.split(",") if isinstance(held, str) else list(held or [])


def test_one_tag_repeated_past_the_limit_is_kept_once(surface: SurfaceDeps[CanonicalServices]) -> None:
    joined = ",".join(["heron"] * 10)
    assert len(joined.split(",")) * 7 > MAX_TAGS
    assert remembered(surface, [joined] * 7 + ["dawn"]) == ["heron", "dawn"]


def test_more_distinct_tags_than_the_limit_are_refused(surface: SurfaceDeps[CanonicalServices]) -> None:
    many = [",".join(f"t{i}-{j}" for j in range(5)) for i in range(MAX_TAGS // 5 + 1)]
    with pytest.raises(InvalidInput, match=f"at most {MAX_TAGS} tags"):
        remembered(surface, many)
