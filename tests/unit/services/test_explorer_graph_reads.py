"""The explorer's graph shows PER_NODE links of a node per direction; a hub of many numbered links
(gbrain's) is read only as far as that, not a page of 1,000 links per direction each time one of
its neighbours is drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.services.explorer.neighbourhood import PER_NODE, Neighbourhoods
from cairn.services.links.graph import LinkDraft


def test_a_hub_of_many_numbered_links_is_read_only_as_far_as_it_is_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = build_container(Settings(data_dir=tmp_path))
    brain = c.brains.create("Hub", slug="hub")
    hub, other = (c.documents.write(brain, f"{name}.md", b"a page").document.id for name in ("hub", "other"))
    c.graph.add_many(brain, [LinkDraft(hub, other, "r")])
    c.graph.add_many(brain, [LinkDraft(hub, f"doc_gone_{i}", "r") for i in range(600)])
    c.graph.add_many(brain, [LinkDraft(f"doc_from_{i}", hub, "r") for i in range(600)])
    hoods = Neighbourhoods(c.documents.repo, c.entities.repo, c.search.chunks)
    records = hoods.links.records
    read: list[int] = []
    real_query = records.query

    def counted(pk: str, *args: Any, **kwargs: Any) -> Any:
        page = real_query(pk, *args, **kwargs)
        if "nout#" in pk or "nin#" in pk:
            read.append(len(page.items))
        return page

    monkeypatch.setattr(records, "query", counted)
    graph = hoods.around(brain, hub, hops=1)
    assert [e.target for e in graph.edges if e.source == hub] == [other]  # the others are gone
    assert read == [PER_NODE, PER_NODE]  # one page each way: what is shown
