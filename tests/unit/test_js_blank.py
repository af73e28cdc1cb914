"""A text is blank on the surfaces whose originals are TypeScript (canonical, zengram, gbrain,
ThoughtMCP) when JavaScript's `trim()` leaves it empty, not Python's `strip()`: a byte-order mark
alone is blank there and an information separator (U+001C) is not. Mnemosyne, a Python system,
keeps Python's reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import InvalidInput
from cairn.domain.js_text import js_blank, js_squash, js_trim
from cairn.entrypoints.mcp.kit import SurfaceDeps
from cairn.entrypoints.mcp.mnemosyne import args as mnemosyne_args
from cairn.entrypoints.mcp.mnemosyne import tools as mnemosyne_tools
from cairn.entrypoints.mcp.mnemosyne.services import mnemosyne_services
from cairn.entrypoints.mcp.thoughtmcp import args as thought_args
from cairn.entrypoints.mcp.thoughtmcp import tools as thought_tools
from cairn.entrypoints.mcp.thoughtmcp.services import thought_services
from cairn.entrypoints.mcp.zengram import args as zengram_args
from cairn.entrypoints.mcp.zengram import tools as zengram_tools
from cairn.entrypoints.mcp.zengram.services import zengram_services
from cairn.services.ingest.inputs import LocalFilePolicy
from tests.fakes.container import fake_container

BOM, SEPARATOR = "\ufeff", "\x1c"
NO_FILES = LocalFilePolicy(root=None, max_bytes=1)


@pytest.fixture
def container(tmp_path: Path) -> Container:
    return fake_container(tmp_path)


def test_blank_is_what_javascripts_trim_leaves_empty() -> None:
    assert js_blank(BOM) and js_blank(" \t\u3000\u2028\u00a0" + BOM)
    assert not js_blank(SEPARATOR) and not js_blank("\x1f") and not js_blank("\x85")
    assert js_trim(f"{BOM} heron\u2029") == "heron"
    assert js_trim(f"{SEPARATOR}heron ") == f"{SEPARATOR}heron"
    assert js_squash(f"{BOM} grey\t\u3000{BOM}heron\x85{SEPARATOR} ") == f"grey heron\x85{SEPARATOR}"


def text_of(result: object) -> str:
    return str(result.content[0].text)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("query", "blank"), [(BOM, True), (SEPARATOR, False)])
def test_zengram_search(container: Container, query: str, blank: bool) -> None:
    surface = SurfaceDeps(zengram_services(container), NO_FILES)
    found = zengram_tools.search(surface, zengram_args.SearchArgs.model_validate({"query": query}))
    refused = text_of(found) == 'Error: "query" is required (non-empty string)'
    assert refused == blank


@pytest.mark.parametrize(("text", "blank"), [(BOM, True), (SEPARATOR, False)])
def test_thoughtmcp_recall(container: Container, text: str, blank: bool) -> None:
    surface = SurfaceDeps(thought_services(container), NO_FILES)
    recall = thought_args.RecallArgs.model_validate({"userId": "u1", "text": text})
    try:
        thought_tools.recall(surface, recall)
        refused = False
    except Exception as error:  # ThoughtError, answered in ThoughtMCP's style by its policy
        refused = thought_tools.BLANK_RECALL in str(error)
    assert refused == blank


@pytest.mark.parametrize(("query", "blank"), [(BOM, True), (SEPARATOR, False)])
def test_canonical_and_rest_search(container: Container, query: str, blank: bool) -> None:
    brain = container.brains.create("Notes")
    try:
        container.search.search(brain, query)
        refused = False
    except InvalidInput as error:
        refused = "query must not be empty" in str(error)
    assert refused == blank


@pytest.mark.parametrize(("query", "blank"), [(BOM, True), (SEPARATOR, False)])
def test_gbrain_gap(container: Container, query: str, blank: bool) -> None:
    brain = container.brains.create("Pages")
    try:
        container.gaps.log(brain, query)
        refused = False
    except InvalidInput as error:
        refused = "query must not be empty" in str(error)
    assert refused == blank


@pytest.mark.parametrize(("query", "blank"), [(BOM, False), (SEPARATOR, True)])
def test_mnemosyne_keeps_pythons_reading(container: Container, query: str, blank: bool) -> None:
    surface = SurfaceDeps(mnemosyne_services(container), NO_FILES)
    try:
        mnemosyne_tools.search(surface, mnemosyne_args.SearchArgs.model_validate({"query": query}))
        refused = False
    except InvalidInput as error:
        refused = "query must not be empty" in str(error)
    assert refused == blank


@pytest.mark.parametrize(
    ("text", "blank"), [(BOM, True), (f" {BOM}\u3000", True), (SEPARATOR, False), ("\x85", False)]
)
def test_thoughtmcp_recall_ranks_a_blank_text_by_salience(
    container: Container, text: str, blank: bool
) -> None:
    """Recall's service reads the text as its surface does: a text JavaScript's trim() leaves
    empty is no text (ranked by salience), any other is embedded and compared."""
    from cairn.services.thoughtmcp import thought_scoring as ts
    from cairn.services.thoughtmcp.brain import thought_brain
    from cairn.services.thoughtmcp.models import Filters, NewMemory

    brain = thought_brain(container.brains, None, create=True)
    assert brain is not None
    container.thoughts.remember(brain, NewMemory("The lamp was lit at six.", "u1", "s1", "semantic"))
    (found,), _ = container.thoughts.recall(brain, "u1", text=text, filters=Filters(), min_similarity=0.0)
    s = found.score
    by_salience = ts.composite(None, s.salience, s.recency, s.link_weight).total
    assert (s.total == by_salience) == blank


@pytest.mark.parametrize(
    ("query", "blank"), [(BOM, True), (f"\t{BOM}\u3000", True), (SEPARATOR, False), ("\x85", False)]
)
def test_zengram_searches_and_reflects_on_any_text_trim_leaves(
    container: Container, query: str, blank: bool
) -> None:
    """The typed memories' search leaves whitespace to its surface: a query zengram reads as text
    is searched, not refused as empty by Python's reading behind it."""
    surface = SurfaceDeps(zengram_services(container), NO_FILES)
    stored = zengram_args.StoreArgs.model_validate({"type": "event", "content": "The lamp was lit at six."})
    assert not text_of(zengram_tools.store(surface, stored)).startswith("Error:")
    found = text_of(zengram_tools.search(surface, zengram_args.SearchArgs.model_validate({"query": query})))
    reflected = text_of(
        zengram_tools.reflect(surface, zengram_args.ReflectArgs.model_validate({"topic": query}))
    )
    if blank:
        assert found == 'Error: "query" is required (non-empty string)'
        assert reflected == 'Error: "topic" is required (non-empty string)'
    else:
        assert json.loads(found)["query"] == query
        assert not reflected.startswith("Error:")


@pytest.mark.parametrize(
    ("around", "trimmed"), [(BOM, True), (f"\u3000{BOM}", True), (SEPARATOR, False), ("\x85", False)]
)
def test_gbrain_query_names_a_page_by_its_slug_within_what_trim_removes(
    container: Container, around: str, trimmed: bool
) -> None:
    """brain_query answers the page a query names by its slug (`[[slug]]` too) alone, at score 1,
    once the whitespace JavaScript's trim() removes is taken off either end."""
    from cairn.services.gbrain.page_search import PageSearch
    from tests.integration.gbrain.conftest import page

    container.brains.create("Work", slug="work")
    container.pages.put("tools/anvils", page("Anvils", "anvil anvil anvil"))
    container.pages.put("tools/kit", page("Kit", "anvil forge hammer tongs"))
    search = PageSearch(container.pages, container.search, container.graph, container.gaps)
    brain = container.pages.write_target()
    for query in (f"{around}tools/anvils{around}", f"[[{around}tools/anvils{around}]]"):
        hits = search.query(brain, query, limit=10)
        exact = [(h.page.slug, h.score) for h in hits] == [("tools/anvils", 1.0)]
        assert exact == trimmed
