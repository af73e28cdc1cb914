"""Mnemosyne's graph leg (ConceptGraph.search, services/mnemosyne/concepts.py) on every RecordStore
adapter (conftest.RECORD_STORES): it reads a concept's links no further than the first that makes
the concept too common to count (MIN_IDF), decodes no Link model per link it reads, and ranks
exactly as it did when it decoded every link it read up to MAX_DF (`_searched`, that search), on
generated graphs of several brains."""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from cairn.domain.models import Chunk, Link
from cairn.ports.records import RecordStore
from cairn.services.links.repository import LinkRepository
from cairn.services.mnemosyne import concepts
from cairn.services.mnemosyne.concept_rules import ConceptMention, ConceptRules
from cairn.services.mnemosyne.concepts import CONCEPT, MIN_IDF, NODE_PREFIX, ConceptGraph, ConceptHit
from tests.contract.test_graph_paging_contract import ReadCounting
from tests.fakes.chunks import MemoryChunkIndex
from tests.fakes.clock import FakeClock

T0 = datetime(2026, 3, 15, 9, 0, tzinfo=UTC)
GRAPHS = {"memory": 40, "sqlite": 20, "dynamodb": 4}  # generated graphs compared per store
NAMES = ["Darcy", "Longbourn", "Netherfield Park", "Jane Bennet", "GDPR", "Q042X", "Kitty", "Meryton"]


def _graph(records: RecordStore) -> tuple[ConceptGraph, LinkRepository]:
    links = LinkRepository(records)
    return ConceptGraph(links, ConceptRules(), MemoryChunkIndex(8), FakeClock(T0)), links


def _chunks(brain_id: str, texts: Sequence[str]) -> list[Chunk]:
    return [
        Chunk(id=f"chk_{brain_id}_{n:03d}", brain_id=brain_id, document_id="doc_1", path="a.md", ordinal=n,
              text=text, created_at=T0)
        for n, text in enumerate(texts)
    ]  # fmt: skip


def _first_too_common(total: int) -> int:
    """The fewest chunks of `total` a concept can be on and weigh under MIN_IDF (BM25's idf)."""
    return next(df for df in range(1, total + 1) if math.log(1 + (total - df + 0.5) / (df + 0.5)) < MIN_IDF)


def test_a_concept_too_common_to_count_is_read_only_until_that_shows(records: RecordStore) -> None:
    counting = ReadCounting(records)
    graph, _ = _graph(counting)
    texts = [f"Dinner with Darcy on day {n}." for n in range(100)]
    texts[:3] = [f"A ride with Darcy to Longbourn on day {n}." for n in range(3)]
    graph.index("brn_1", "\n\n".join(texts), _chunks("brn_1", texts), fresh=True)
    counting.read = 0
    hits = graph.search(["brn_1"], "Darcy at Longbourn", limit=10, sizes={"brn_1": 100})
    assert [h.chunk_id for h in hits] == [f"chk_brn_1_{n:03d}" for n in range(3)]
    assert all(h.concepts == ("longbourn",) for h in hits)  # Darcy, on every chunk, is passed over
    # Darcy's links read until one more than the most a concept that counts may have (all 100 before)
    assert counting.read == _first_too_common(100) + 3 < 100


def test_the_graph_leg_decodes_no_link_model_per_link_it_reads(
    records: RecordStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph, _ = _graph(records)
    texts = [f"Notes on Meryton and Kitty, {n}." for n in range(60)]
    graph.index("brn_1", "\n\n".join(texts), _chunks("brn_1", texts), fresh=True)
    decoded: list[object] = []
    validate = Link.model_validate
    monkeypatch.setattr(Link, "model_validate", lambda data: decoded.append(data) or validate(data))
    hits = graph.search(["brn_1"], "Kitty in Meryton", limit=5, sizes={"brn_1": 600})
    assert len(hits) == 5 and sorted(hits[0].concepts) == ["kitty", "meryton"]
    assert set(hits[0].mentions) == {ConceptMention("Kitty"), ConceptMention("Meryton")}
    assert decoded == []  # 120 links read (a Link model validated for each before)


def _searched(
    links: LinkRepository, brain_ids: Sequence[str], query: str, limit: int, sizes: dict[str, int]
) -> list[ConceptHit]:
    """The graph leg's concepts search as it was when it decoded every link it read, up to MAX_DF."""
    candidates = concepts._query_concepts(query, ConceptRules().extract(query))
    scores: dict[tuple[str, str], float] = defaultdict(float)
    matched: dict[tuple[str, str], list[str]] = defaultdict(list)
    named: dict[tuple[str, str], list[ConceptMention]] = defaultdict(list)
    for brain_id in brain_ids:
        total = max(sizes.get(brain_id, 0), 1)
        for node, words in candidates.items():
            linked = links.incoming(brain_id, node, CONCEPT, limit=concepts.MAX_DF)
            if not linked:
                continue
            df = len(linked)
            idf = math.log(1.0 + max(total - df + 0.5, 0.0) / (df + 0.5))
            if idf < MIN_IDF:
                continue
            for link in linked:
                key = (brain_id, link.source_id)
                scores[key] += words * idf
                matched[key].append(node.removeprefix(NODE_PREFIX))
                name, aliases = link.metadata.get("name"), link.metadata.get("aliases")
                named[key].append(
                    ConceptMention(
                        name if isinstance(name, str) and name else node.removeprefix(NODE_PREFIX),
                        tuple(a for a in aliases.split("\n") if a) if isinstance(aliases, str) else (),
                    )
                )
    ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0][1]))[:limit]
    return [ConceptHit(c, b, s, tuple(matched[(b, c)]), tuple(named[(b, c)])) for (b, c), s in ranked]


def test_the_graph_leg_ranks_as_it_did_when_it_decoded_every_link(
    records: RecordStore, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(concepts, "MAX_DF", 12)  # so a concept on more chunks than it is common
    store = request.node.callspec.params["records"]
    rng = random.Random(123)
    compared = 0
    for g in range(GRAPHS[store]):
        graph, links = _graph(records)
        brains = [f"brn_{g}_{b}" for b in range(rng.randint(1, 3))]
        sizes = {}
        for brain_id in brains:
            common = rng.sample(NAMES, 2)  # on most chunks: some read past MAX_DF, some under MIN_IDF
            texts = [
                "With "
                + " and ".join(
                    [*(n for n in common if rng.random() < 0.95), *rng.sample(NAMES, rng.randint(0, 3))]
                )
                + f" on day {n}."
                for n in range(rng.randint(3, 24))
            ]
            graph.index(brain_id, "\n\n".join(texts), _chunks(brain_id, texts), fresh=True)
            sizes[brain_id] = len(texts) + rng.choice([0, 0, -2, 5])  # a count may lag the links
        for _ in range(3):
            query = "Did " + " or ".join(rng.sample(NAMES, rng.randint(1, 4))) + " write?"
            limit = rng.choice([3, 10, 300])
            got = graph.search(brains, query, limit=limit, sizes=sizes)
            assert got == _searched(links, brains, query, limit, sizes), (g, query)
            compared += len(got)
    assert compared > 10 * GRAPHS[store]  # the queries do reach chunks
