"""Python's `$` also matches before a final newline, so `pattern.match` let "name\n" through every
`^…$` check: a zengram source agent erasure could not name, a second brain listed as `ops`, a key
name printed over two lines. Each check matches the whole value."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.auth.api_keys import ApiKeyService
from cairn.auth.principal import READ
from cairn.domain.errors import InvalidInput
from cairn.services.zengram.validate import Refused, memory_body
from tests.fakes.clock import FakeClock
from tests.fakes.container import fake_container
from tests.fakes.records import MemoryRecordStore


def test_a_brain_slug_or_owner_ending_in_a_newline_is_refused(tmp_path: Path) -> None:
    container = fake_container(tmp_path)
    with pytest.raises(InvalidInput):
        container.brains.create("Ops team", slug="ops\n")
    brain = container.brains.create("Ops team", slug="ops")
    with pytest.raises(InvalidInput):
        container.brains.update(brain.id, owner="alice\n")
    assert [b.slug for b in container.brains.list()] == ["ops"]


def test_a_key_name_or_tenant_ending_in_a_newline_is_refused() -> None:
    keys = ApiKeyService(MemoryRecordStore(), FakeClock())
    for name, tenant in (("ci bot\n", "acme"), ("ci bot", "acme\n")):
        with pytest.raises(InvalidInput):
            keys.create(name=name, tenant=tenant, scopes=[READ])


def test_a_zengram_source_agent_ending_in_a_newline_is_refused() -> None:
    body = {"type": "fact", "content": "The build runs nightly.", "key": "build_schedule"}
    assert memory_body({**body, "source_agent": "alice"})["source_agent"] == "alice"
    with pytest.raises(Refused):
        memory_body({**body, "source_agent": "alice\n"})


def test_names_shown_in_listings_refuse_bidirectional_overrides(tmp_path: Path) -> None:
    """`Q3 report \u202eexe.fdp` displays as `Q3 report pdf.exe`: refused where it is given as a title,
    a tag or a zengram name, dropped from a title read from a heading."""
    from cairn.ingest.markdown import title_from_markdown
    from cairn.services.ingest.inputs import checked_tags, checked_title

    with pytest.raises(InvalidInput):
        checked_title("Q3 report \u202eexe.fdp")
    with pytest.raises(InvalidInput):
        checked_tags(["fi\u202enance"])
    body = {"type": "fact", "content": "The build runs nightly.", "source_agent": "ci"}
    for name in ("key", "client_id", "subject"):
        with pytest.raises(Refused):
            memory_body({**body, name: "acme\u202eevil"})
    with pytest.raises(Refused):
        memory_body({**body, "client_id": "acme\nInjected: line"})
    assert title_from_markdown("# Q3 report \u202eexe.fdp\n\nbody") == "Q3 report exe.fdp"
