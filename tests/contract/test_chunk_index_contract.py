"""ChunkIndex contract: the in-memory fake, the embedded SQLite index and OpenSearch (on a real
cluster when OPENSEARCH_URL is set) behave the same.

The filter cases build a brain where chunks that fail the filter would fill both legs'
candidate pools if the filter were applied after fusion; passing means the filter runs inside
each leg, before the pool is cut. The SQLite-only cases (reopen, a second instance on the same
files, the term planner, a torn vector file) sit at the end, so the port keeps one test file
(hence its length).
"""

from __future__ import annotations

import sqlite3
import threading
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from cairn.adapters.local import fts_search
from cairn.adapters.local.fts_query import match_expression
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.domain.boolean_query import And, BoolQuery, Not, Or, Phrase, Term, parse
from cairn.domain.errors import InvalidInput
from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkFilter, ChunkIndex, ChunkQuery, ScrubbableChunks
from tests.contract.aws_opensearch import opensearch_chunks, opensearch_hybrid_chunks
from tests.fakes.chunks import MemoryChunkIndex

DIM = 16
T0 = datetime(2025, 3, 1, tzinfo=UTC)
Factory = Callable[[], ChunkIndex]


def axis(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    return v


def toward(i: int, j: int, share: float) -> np.ndarray:
    """A unit vector mostly along axis j with `share` of axis i mixed in."""
    v = share * axis(i) + (1 - share) * axis(j)
    return v / np.linalg.norm(v)


def chunk(cid: str, text: str, **fields: object) -> Chunk:
    values: dict[str, object] = {
        "id": cid,
        "brain_id": "b1",
        "document_id": f"doc-{cid}",
        "path": f"notes/{cid}.md",
        "ordinal": 0,
        "text": text,
        "created_at": T0,
    }
    values.update(fields)
    return Chunk.model_validate(values)


def search(index: ChunkIndex, text: str, vector: np.ndarray | None = None, **options: object) -> list[str]:
    return [h.chunk.id for h in index.search(query(text, vector, **options))]


def query(text: str, vector: np.ndarray | None = None, **options: object) -> ChunkQuery:
    filter_fields = {k: options.pop(k) for k in list(options) if k in ChunkFilter.__dataclass_fields__}
    chunk_filter = ChunkFilter(**{"brain_ids": ("b1",), **filter_fields})  # type: ignore[arg-type]
    return ChunkQuery(
        text=text,
        vector=None if vector is None else vector.tolist(),
        filter=chunk_filter,
        **options,  # type: ignore[arg-type]
    )


@pytest.fixture(params=["memory", "sqlite", "opensearch", "opensearch-hybrid"])
def make_index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    if request.param.startswith("opensearch"):  # a real cluster: skipped unless OPENSEARCH_URL is set
        factory = opensearch_chunks if request.param == "opensearch" else opensearch_hybrid_chunks
        with factory(request) as cluster_index:
            yield lambda: cluster_index
        return
    opened: list[SqliteChunkIndex] = []

    def make() -> ChunkIndex:
        if request.param == "memory":
            return MemoryChunkIndex(DIM)
        index = SqliteChunkIndex(tmp_path / "chunks.db", tmp_path / "vectors", DIM)
        opened.append(index)
        return index

    yield make
    for index in opened:
        index.close()


@pytest.fixture
def index(make_index: Factory) -> ChunkIndex:
    return make_index()


# -- basic search --------------------------------------------------------------------------


def test_keyword_search_finds_the_chunk_with_the_word(index: ChunkIndex) -> None:
    index.upsert(
        [chunk("a", "the heron waded through the marsh"), chunk("b", "a quiet afternoon of reading")],
        np.stack([axis(0), axis(1)]),
    )
    hits = index.search(query("where did the heron go?"))
    assert [h.chunk.id for h in hits] == ["a"]
    assert hits[0].bm25_rank == 1 and hits[0].vector_rank is None
    assert hits[0].bm25_score is not None and hits[0].bm25_score > 0


def test_the_keyword_leg_matches_tags_and_reads_give_title_and_tags_back_unchanged(index: ChunkIndex) -> None:
    failure = chunk(
        "t", "The compressor failed overnight.", title="Freezer B", tags=["incidents", "kw:compressor"]
    )
    stocks = chunk(
        "u", "Racks 1 to 4 hold the cell lines.", title="Freezer incidents", tags=["incidents", "storage"]
    )
    plain = chunk("v", "The Nikon widefield is ours; no booking needed.", title="Widefield")
    index.upsert([failure, stocks, plain], np.stack([axis(0), axis(1), axis(2)]))
    assert set(search(index, "what incidents have we had?")) == {"t", "u"}
    assert search(index, "storage") == ["u"]
    assert search(index, "kw") == []  # a tag's namespace is not one of its words
    assert search(index, "compressor") == ["t"]
    assert index.get_many("b1", ["t", "u", "v"]) == {"t": failure, "u": stocks, "v": plain}
    assert index.get_chunks("b1", "doc-u") == [stocks]  # a title ending in a tag's word keeps it


def test_a_tag_with_a_comma_is_one_tag(index: ChunkIndex) -> None:
    """ThoughtMCP keeps a memory's tag whole, commas and all: filtered on and read back as one."""
    whole = chunk("a", "The billing deploy ran.", tags=["tag:ops,billing"])
    parts = chunk("b", "The billing deploy ran again.", tags=["tag:ops", "billing"])
    index.upsert([whole, parts], np.stack([axis(0), axis(1)]))
    assert search(index, "deploy", tags=("tag:ops,billing",)) == ["a"]
    assert search(index, "deploy", tags=("tag:ops",)) == ["b"]
    assert search(index, "deploy", any_tags=(("tag:ops,billing", "nothing"),)) == ["a"]
    assert index.get_many("b1", ["a"]) == {"a": whole}


def test_vector_search_ranks_by_cosine(index: ChunkIndex) -> None:
    index.upsert(
        [chunk("a", "alpha"), chunk("b", "beta"), chunk("c", "gamma")],
        np.stack([axis(0), toward(0, 1, 0.5), axis(2)]),
    )
    hits = index.search(query("", axis(0) * 3.0))  # query vectors need not be unit length
    assert [h.chunk.id for h in hits] == ["a", "b", "c"]
    assert [h.vector_rank for h in hits] == [1, 2, 3]
    assert hits[0].vector_similarity == pytest.approx(1.0, abs=1e-6)
    assert all(h.bm25_rank is None for h in hits)


def test_nearest_returns_the_vector_legs_first_hits_the_fusion_ranked_past_top_k(index: ChunkIndex) -> None:
    """Four chunks share the query's word and fill the fused head; the nearest chunk by meaning
    shares none, so the fusion ranks it past top_k. `nearest` hands it back after the fused hits,
    with its vector rank and similarity; a hit already in the head is not repeated."""
    worded = [chunk(f"k{i}", f"the heron note number {i}") for i in range(1, 5)]
    index.upsert(
        [*worded, chunk("v", "a grey wading bird stood still")],
        np.stack([axis(1), axis(2), axis(3), axis(4), axis(0)]),
    )
    options = {"top_k": 3, "bm25_weight": 1.0, "vector_weight": 0.1}
    plain = search(index, "heron", axis(0), **options)
    assert len(plain) == 3 and "v" not in plain
    hits = index.search(query("heron", axis(0), nearest=1, **options))
    assert [h.chunk.id for h in hits[:3]] == plain
    assert [h.chunk.id for h in hits[3:]] == ["v"]
    assert hits[3].vector_rank == 1 and hits[3].vector_similarity == pytest.approx(1.0, abs=1e-3)
    wide = search(index, "heron", axis(0), top_k=5, bm25_weight=1.0, vector_weight=0.1, nearest=1)
    assert sorted(wide) == ["k1", "k2", "k3", "k4", "v"]


def test_documents_widens_a_head_of_too_few_documents_to_the_pool(index: ChunkIndex) -> None:
    """Two long documents fill the first four hits with their chunks; asked for four documents,
    the head is the fusion's first `candidate_pool`, exactly as if that many had been asked for.
    A head that holds enough documents, or is not full, stays as asked."""
    long = [
        chunk(f"{d}{i}", f"heron sighting {d} {i} heron heron", document_id=f"doc-{d}", ordinal=i)
        for d in "pq"
        for i in range(4)
    ]
    short = [chunk(f"s{i}", f"a heron once, note {i}") for i in range(3)]
    index.upsert([*long, *short], np.stack([axis(i % DIM) for i in range(len(long) + len(short))]))
    options = {"top_k": 4, "candidate_pool": 11, "bm25_weight": 1.0, "vector_weight": 0.0}
    head = index.search(query("heron", **options))
    held = {h.chunk.document_id for h in head}
    assert held <= {"doc-p", "doc-q"}
    pool = search(index, "heron", **{**options, "top_k": 11})
    assert len(pool) == 11
    assert search(index, "heron", documents=4, **options) == pool
    first = [h.chunk.id for h in head]
    assert search(index, "heron", documents=len(held), **options) == first
    assert search(index, "heron", documents=4, **{**options, "candidate_pool": 4}) == first
    few = search(index, "sighting", documents=4, **{**options, "top_k": 9})  # not full: 8 hits
    assert sorted(few) == sorted(c.id for c in long)


def test_stopword_only_text_with_a_vector_runs_the_vector_leg_alone(index: ChunkIndex) -> None:
    index.upsert([chunk("a", "what is this"), chunk("b", "other")], np.stack([axis(1), axis(0)]))
    assert search(index, "what is the", axis(0)) == ["b", "a"]
    assert search(index, "what is the") == []


def test_upsert_round_trips_every_chunk_field(index: ChunkIndex) -> None:
    original = chunk(
        "a",
        "body text",
        title="A title",
        fingerprint="e1:r1",
        start=5,
        end=14,
        ordinal=3,
        tags=["x", "y"],
        type="fact",
        scope="team",
        sector="semantic",
        valid_from=T0 - timedelta(days=1),
        valid_to=T0 + timedelta(days=1),
        active=True,
        current=False,
        facets={"type": "fact", "client_id": "c-1", "knowledge_category": "héron 🦓", "any name": "x"},
        importance=0.123456789,
        created_at=datetime(2025, 3, 1, 12, 30, 45, 123456, tzinfo=UTC),
    )
    index.upsert([original], axis(0)[None, :])
    assert index.get_chunks("b1", original.document_id) == [original]
    assert index.search(query("body"))[0].chunk == original
    assert index.search(query("", axis(0)))[0].chunk == original


def test_a_chunk_upserted_without_memory_fields_reads_back_current_and_bare(index: ChunkIndex) -> None:
    index.upsert([chunk("a", "body text")], axis(0)[None, :])
    (stored,) = index.get_chunks("b1", "doc-a")
    assert (stored.current, stored.facets, stored.importance) == (True, {}, None)
    (hit,) = index.search(query("body", axis(0)))
    assert (hit.chunk.current, hit.chunk.facets, hit.chunk.importance) == (True, {}, None)


def test_top_k_limits_and_scores_are_descending(index: ChunkIndex) -> None:
    chunks = [chunk(f"c{i}", f"lantern {'lantern ' * i}") for i in range(8)]
    index.upsert(chunks, np.stack([toward(0, 1, i / 10) for i in range(8)]))
    hits = index.search(query("lantern", axis(0), top_k=3))
    assert len(hits) == 3
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


# -- fusion ----------------------------------------------------------------------------------


def test_rrf_score_is_the_sum_of_reciprocal_ranks(index: ChunkIndex) -> None:
    # Given: only "a" has the word (BM25 rank 1); by vector "b" is closest, then "a"
    index.upsert(
        [chunk("a", "kestrel sighting"), chunk("b", "nothing relevant"), chunk("c", "more filler")],
        np.stack([toward(0, 1, 0.8), axis(0), axis(2)]),
    )
    hits = {h.chunk.id: h for h in index.search(query("kestrel", axis(0)))}
    # Then: a = 1/(60+1) + 1/(60+2), b = 1/(60+1), c = 1/(60+3)
    assert (hits["a"].bm25_rank, hits["a"].vector_rank) == (1, 2)
    assert hits["a"].score == pytest.approx(1 / 61 + 1 / 62)
    assert hits["b"].score == pytest.approx(1 / 61)
    assert hits["c"].score == pytest.approx(1 / 63)
    assert list(hits) == ["a", "b", "c"]


def test_leg_weights_and_rrf_k_scale_the_contributions(index: ChunkIndex) -> None:
    index.upsert(
        [chunk("a", "kestrel sighting"), chunk("b", "nothing relevant")],
        np.stack([toward(0, 1, 0.8), axis(0)]),
    )
    options = {"bm25_weight": 2.0, "vector_weight": 0.5, "rrf_k": 10}
    hits = {h.chunk.id: h for h in index.search(query("kestrel", axis(0), **options))}
    assert hits["a"].score == pytest.approx(2.0 / 11 + 0.5 / 12)
    assert hits["b"].score == pytest.approx(0.5 / 11)


def test_a_zero_weight_leg_is_not_run(index: ChunkIndex) -> None:
    index.upsert([chunk("a", "kestrel"), chunk("b", "other")], np.stack([axis(1), axis(0)]))
    hits = index.search(query("kestrel", axis(0), vector_weight=0.0))
    assert [(h.chunk.id, h.vector_rank) for h in hits] == [("a", None)]


def test_equal_scores_break_ties_by_best_rank_then_id(index: ChunkIndex) -> None:
    # "b" is first by BM25 and second by vector, "a" the reverse: equal scores, equal best rank
    index.upsert(
        [chunk("b", "osprey osprey nest"), chunk("a", "osprey nest tree")],
        np.stack([toward(0, 1, 0.5), axis(0)]),
    )
    hits = index.search(query("osprey", axis(0)))
    assert [(h.chunk.id, h.bm25_rank, h.vector_rank) for h in hits] == [("a", 2, 1), ("b", 1, 2)]
    assert hits[0].score == pytest.approx(hits[1].score)


def test_negative_weights_or_rrf_k_are_rejected(index: ChunkIndex) -> None:
    with pytest.raises(InvalidInput):
        index.search(query("x", bm25_weight=-1.0))
    with pytest.raises(InvalidInput):
        index.search(query("x", rrf_k=-1))


# -- filters inside each leg ---------------------------------------------------------------

KEEP_TEXT = "the zebra was seen once near the river bank among many other animals today"


def _filter_case(name: str) -> tuple[list[Chunk], list[Chunk], dict[str, object]]:
    """(chunks that pass, chunks that fail but would dominate, filter options)."""
    keep = [chunk(f"keep{i}", KEEP_TEXT, document_id=f"dk{i % 2}", path=f"keep/a/{i}.md") for i in range(5)]
    noise = [
        chunk(f"noise{i:02d}", "zebra zebra zebra", document_id="dn", path=f"noise/{i}.md") for i in range(30)
    ]
    if name == "brain":
        noise = [n.model_copy(update={"brain_id": "b2"}) for n in noise]
        return keep, noise, {}
    if name == "path_prefix":
        return keep, noise, {"path_prefixes": ("keep/",)}
    if name == "path_prefixes":
        keep = [k.model_copy(update={"path": f"keep/{'ab'[i % 2]}/{i}.md"}) for i, k in enumerate(keep)]
        noise = [n.model_copy(update={"path": f"keep/c/{i}.md"}) for i, n in enumerate(noise)]
        return keep, noise, {"path_prefixes": ("keep/a/", "keep/b/")}
    if name == "tags":
        keep = [k.model_copy(update={"tags": ["red", "blue", "extra"]}) for k in keep]
        noise = [n.model_copy(update={"tags": [["red"], ["blue"]][i % 2]}) for i, n in enumerate(noise)]
        return keep, noise, {"tags": ("red", "blue")}
    if name == "created":
        keep = [k.model_copy(update={"created_at": T0 + timedelta(hours=i)}) for i, k in enumerate(keep)]
        edges = [T0 - timedelta(milliseconds=1), T0 + timedelta(days=1)]
        noise = [n.model_copy(update={"created_at": edges[i % 2]}) for i, n in enumerate(noise)]
        return keep, noise, {"created_from": T0, "created_to": T0 + timedelta(days=1)}
    if name == "document_ids":
        return keep, noise, {"document_ids": ("dk0", "dk1")}
    if name == "inactive":
        return keep, [n.model_copy(update={"active": False}) for n in noise], {}
    return _memory_filter_case(name, keep, noise)


PLUS2, MINUS5 = timezone(timedelta(hours=2)), timezone(timedelta(hours=-5))
MS = timedelta(milliseconds=1)
# (valid_from, valid_to) valid at T0: a start at T0 itself is in, a start 1 ms before T0 written
# at -05:00 sorts after T0 as text but is before it in time
VALID_AT_T0 = [
    (T0.astimezone(PLUS2), None),
    (None, T0 + MS),
    (None, None),
    (T0 - timedelta(days=1), T0 + timedelta(days=1)),
    ((T0 - MS).astimezone(MINUS5), (T0 + timedelta(hours=1)).astimezone(PLUS2)),
]
# ... and not: an end at T0 itself is out; a start 1 ms after T0 at -05:00 sorts before T0 as
# text, an end 1 hour before T0 at +02:00 sorts after it
INVALID_AT_T0 = [
    (None, T0),
    ((T0 + MS).astimezone(MINUS5), None),
    (T0 + timedelta(days=1), None),
    (T0 - timedelta(days=2), T0 - timedelta(days=1)),
    (None, (T0 - timedelta(hours=1)).astimezone(PLUS2)),
]
FACT_C1 = {"type": "fact", "client_id": "c1", "source_agent": "claude"}


def _memory_filter_case(
    name: str, keep: list[Chunk], noise: list[Chunk]
) -> tuple[list[Chunk], list[Chunk], dict[str, object]]:
    """The filters on a chunk's memory: facets, importance, validity and the current version."""

    def cycle(chunks: list[Chunk], updates: list[dict[str, object]]) -> list[Chunk]:
        return [c.model_copy(update=updates[i % len(updates)]) for i, c in enumerate(chunks)]

    if name == "facets":  # any of the values within a name, every name; a missing facet fails
        keep = cycle(keep, [{"facets": FACT_C1}, {"facets": {"type": "decision", "client_id": "c1"}}])
        noise = cycle(
            noise,
            [
                {"facets": {"type": "event", "client_id": "c1"}},
                {"facets": {"type": "fact", "client_id": "c2"}},
                {"facets": {"type": "fact"}},
                {"facets": {}},
                {"facets": {"kind": "fact", "client": "c1"}},
            ],
        )
        return keep, noise, {"facets": (("type", ("fact", "decision")), ("client_id", ("c1",)))}
    if name == "importance":  # at least the minimum; no importance never passes
        keep = cycle(keep, [{"importance": v} for v in (0.5, 0.6, 0.75, 0.9, 1.0)])
        noise = cycle(noise, [{"importance": v} for v in (None, 0.4999, 0.0, -1.0)])
        return keep, noise, {"importance_min": 0.5}
    if name == "valid_at":
        keep = cycle(keep, [{"valid_from": low, "valid_to": high} for low, high in VALID_AT_T0])
        noise = cycle(noise, [{"valid_from": low, "valid_to": high} for low, high in INVALID_AT_T0])
        return keep, noise, {"valid_at": T0.astimezone(MINUS5)}
    if name == "current":
        return keep, [n.model_copy(update={"current": False}) for n in noise], {"current_only": True}
    if name == "owners":  # unowned, the subject's own and its sub-users' pass; nobody else's, in b1 only
        keep = cycle(
            keep, [{"facets": {}}, {"facets": {"user_id": "alice"}}, {"facets": {"user_id": "alice:bot"}}]
        )
        noise = cycle(
            noise,
            [
                {"facets": {"user_id": owner, "type": "fact"}}
                for owner in ("bob", "alicex", "alice-2", "ali", ":alice")
            ],
        )
        return keep, noise, {"owners": (("b1", "alice"), ("b2", None))}
    if name == "no_owners":  # None: no owned chunk of the brain passes
        noise = cycle(noise, [{"facets": {"user_id": owner}} for owner in ("alice", "bob", "")])
        return keep, noise, {"owners": (("b1", None),)}
    if name == "combined":  # every filter at once; each noise chunk fails exactly one of them
        passing: dict[str, object] = {"facets": FACT_C1, "importance": 0.8, "tags": ["red"]}
        keep = cycle(keep, [passing])
        noise = cycle(
            noise,
            [
                {**passing, "path": "keep/n.md", **change}
                for change in (
                    {"current": False},
                    {"importance": 0.1},
                    {"facets": {**FACT_C1, "type": "event"}},
                    {"facets": {"type": "fact"}},
                    {"valid_to": T0},
                    {"tags": ["blue"]},
                    {"path": "noise/n.md"},
                    {"active": False},
                    {"created_at": T0 - MS},
                )
            ],
        )
        options: dict[str, object] = {
            "facets": (("type", ("fact",)), ("client_id", ("c1", "c3"))),
            "importance_min": 0.5,
            "valid_at": T0,
            "current_only": True,
            "tags": ("red",),
            "path_prefixes": ("keep/",),
            "created_from": T0,
        }
        return keep, noise, options
    raise AssertionError(name)


FILTER_CASES = [
    "brain",
    "path_prefix",
    "path_prefixes",
    "tags",
    "created",
    "document_ids",
    "inactive",
    "facets",
    "importance",
    "valid_at",
    "current",
    "owners",
    "no_owners",
    "combined",
]


@pytest.mark.parametrize("case", FILTER_CASES)
def test_filters_apply_inside_each_leg_before_the_pool_is_cut(index: ChunkIndex, case: str) -> None:
    # Given: 30 failing chunks that beat the 5 passing ones in both legs
    keep, noise, options = _filter_case(case)
    vectors = [toward(0, 3, 0.3) for _ in keep] + [axis(0) for _ in noise]
    index.upsert(keep + noise, np.stack(vectors))
    # When: the pools (10) are smaller than the failing chunks
    hits = index.search(query("zebra", axis(0), top_k=5, candidate_pool=10, **options))
    # Then: every passing chunk is found, by both legs
    assert sorted(h.chunk.id for h in hits) == sorted(k.id for k in keep)
    assert all(h.bm25_rank is not None and h.vector_rank is not None for h in hits)


@pytest.mark.parametrize("case", FILTER_CASES)
def test_filters_pick_the_same_chunks_however_the_legs_are_fused(index: ChunkIndex, case: str) -> None:
    # As above without asserting per-leg ranks, so that a hybrid query fused by the cluster,
    # whose hits carry none, is held to it too; and each leg on its own
    keep, noise, options = _filter_case(case)
    index.upsert(keep + noise, np.stack([toward(0, 3, 0.3) for _ in keep] + [axis(0) for _ in noise]))
    expected = sorted(k.id for k in keep)
    for text, vector in [("zebra", axis(0)), ("zebra", None), ("", axis(0))]:
        hits = index.search(query(text, vector, top_k=5, candidate_pool=10, **options))
        assert sorted(h.chunk.id for h in hits) == expected, (text, vector is not None)


def test_without_the_filter_the_dominant_chunks_fill_the_results(index: ChunkIndex) -> None:
    keep, noise, _ = _filter_case("path_prefix")
    index.upsert(keep + noise, np.stack([toward(0, 3, 0.3) for _ in keep] + [axis(0) for _ in noise]))
    hits = index.search(query("zebra", axis(0), top_k=5, candidate_pool=10))
    assert all(h.chunk.id.startswith("noise") for h in hits)


def test_inactive_chunks_are_found_when_active_only_is_off(index: ChunkIndex) -> None:
    index.upsert([chunk("a", "walrus", active=False), chunk("b", "walrus")], np.stack([axis(0), axis(1)]))
    assert search(index, "walrus", axis(0)) == ["b"]
    assert sorted(search(index, "walrus", axis(0), active_only=False)) == ["a", "b"]


# -- the filters on a chunk's memory ------------------------------------------------------------


def memories(index: ChunkIndex, *chunks: Chunk) -> None:
    """Upsert chunks that all hold the word "walrus", with vectors close to axis 0."""
    index.upsert(list(chunks), np.stack([toward(i % DIM, 0, 0.1) for i in range(len(chunks))]))


def both_legs(index: ChunkIndex, **options: object) -> list[str]:
    """The ids found by each leg alone, which must agree; sorted."""
    by_text = sorted(search(index, "walrus", None, top_k=50, **options))
    by_vector = sorted(search(index, "", axis(0), top_k=50, **options))
    assert by_text == by_vector, options
    return by_text


def test_facets_match_any_value_of_a_name_and_every_name(index: ChunkIndex) -> None:
    memories(
        index,
        chunk("a", "walrus", facets={"type": "fact", "client_id": "c1"}),
        chunk("b", "walrus", facets={"type": "decision", "client_id": "c1", "category": "work"}),
        chunk("c", "walrus", facets={"type": "fact", "client_id": "c2"}),
        chunk("d", "walrus"),
        chunk("e", "walrus", facets={"type": "event", "client_id": "c1"}),
        chunk("f", "walrus", facets={"client_id": "c1"}),
    )
    assert both_legs(index) == ["a", "b", "c", "d", "e", "f"]
    assert both_legs(index, facets=(("type", ("fact",)),)) == ["a", "c"]
    assert both_legs(index, facets=(("type", ("fact", "decision")),)) == ["a", "b", "c"]
    assert both_legs(index, facets=(("type", ("fact", "decision")), ("client_id", ("c1",)))) == ["a", "b"]
    assert both_legs(index, facets=(("client_id", ("c1",)),)) == ["a", "b", "e", "f"]
    assert both_legs(index, facets=(("category", ("work",)),)) == ["b"]
    assert both_legs(index, facets=(("type", ("Fact", "fac")),)) == []  # exact, case-sensitive values
    assert both_legs(index, facets=(("subject", ("fact",)),)) == []  # nobody has it
    assert both_legs(index, facets=(("type", ()),)) == []  # one of no values: none
    # the same name twice: both must hold
    assert both_legs(index, facets=(("type", ("fact", "event")), ("type", ("event",)))) == ["e"]


def test_importance_min_keeps_chunks_at_or_above_it_and_never_those_without(index: ChunkIndex) -> None:
    memories(
        index,
        chunk("a", "walrus", importance=0.9),
        chunk("b", "walrus", importance=0.5),
        chunk("c", "walrus", importance=0.4999),
        chunk("d", "walrus"),
        chunk("e", "walrus", importance=0.0),
        chunk("f", "walrus", importance=-0.5),
    )
    assert both_legs(index) == ["a", "b", "c", "d", "e", "f"]
    assert both_legs(index, importance_min=0.5) == ["a", "b"]
    assert both_legs(index, importance_min=0.0) == ["a", "b", "c", "e"]
    assert both_legs(index, importance_min=-1.0) == ["a", "b", "c", "e", "f"]
    assert both_legs(index, importance_min=0.95) == []


def test_valid_at_includes_the_start_excludes_the_end_and_ignores_time_zones(index: ChunkIndex) -> None:
    valid = [
        chunk(f"v{i}", "walrus", valid_from=low, valid_to=high) for i, (low, high) in enumerate(VALID_AT_T0)
    ]
    invalid = [
        chunk(f"x{i}", "walrus", valid_from=low, valid_to=high) for i, (low, high) in enumerate(INVALID_AT_T0)
    ]
    memories(index, *valid, *invalid)
    expected = sorted(c.id for c in valid)
    assert both_legs(index, valid_at=T0) == expected
    assert both_legs(index, valid_at=T0.astimezone(PLUS2)) == expected  # the same moment
    assert both_legs(index, valid_at=T0.replace(tzinfo=None)) == expected  # naive: UTC
    # 1 ms later: v1 has ended, x1 has begun; much earlier: only the open-started ones
    assert both_legs(index, valid_at=T0 + MS) == ["v0", "v2", "v3", "v4", "x1"]
    assert both_legs(index, valid_at=T0 - timedelta(days=10)) == ["v1", "v2", "x0", "x4"]
    assert len(both_legs(index)) == 10


def test_current_only_leaves_out_superseded_chunks(index: ChunkIndex) -> None:
    memories(
        index,
        chunk("now", "walrus"),
        chunk("old", "walrus", current=False),
        chunk("staged", "walrus", active=False),
        chunk("staged-old", "walrus", active=False, current=False),
    )
    assert both_legs(index) == ["now", "old"]
    assert both_legs(index, current_only=True) == ["now"]
    # staged chunks stay out whatever current_only says; with active_only off they are searched
    assert both_legs(index, current_only=False) == ["now", "old"]
    assert both_legs(index, active_only=False) == ["now", "old", "staged", "staged-old"]
    assert both_legs(index, active_only=False, current_only=True) == ["now", "staged"]
    # when nothing is superseded, current_only leaves everything in
    index.delete_chunks("b1", ["old", "staged-old"])
    assert both_legs(index, current_only=True) == ["now"]
    assert both_legs(index, current_only=True, active_only=False) == ["now", "staged"]


@pytest.mark.parametrize("postings", [False, True], ids=["fts5", "postings"])
def test_a_line_of_values_is_found_current_or_back_in_time_wherever_its_rows_sit(
    index: ChunkIndex, monkeypatch: pytest.MonkeyPatch, postings: bool
) -> None:
    """A key's values as a chain writes them (the older first), between current chunks of other
    keys, then reordered: an older value restored (written again, current, after the values that
    superseded it) and the latest one superseded, then the restored one deleted. A current search
    finds the current values only, and one back in time the value valid then, through either path
    of the embedded keyword leg (FTS5, and the term postings of a bigger brain: SQLite only)."""
    if postings:
        monkeypatch.setattr(fts_search, "SMALL_TABLE", 4)
    day = timedelta(days=1)

    def value(n: int, current: bool) -> Chunk:
        return chunk(
            f"v{n}",
            "walrus",
            valid_from=T0 + n * day,
            valid_to=None if current else T0 + (n + 1) * day,
            current=current,
        )

    memories(
        index,
        chunk("a0", "walrus"),
        *(value(n, False) for n in range(8)),
        value(8, True),
        chunk("a1", "walrus"),
    )
    assert both_legs(index, current_only=True) == ["a0", "a1", "v8"]
    assert both_legs(index, valid_at=T0 + 5 * day + MS) == ["a0", "a1", "v5"]
    memories(index, value(8, False), value(3, True))
    assert both_legs(index, current_only=True) == ["a0", "a1", "v3"]
    assert both_legs(index, valid_at=T0 + 8 * day + MS) == ["a0", "a1", "v3", "v8"]
    assert both_legs(index, valid_at=T0 + 8 * day + MS, current_only=True) == ["a0", "a1", "v3"]
    index.delete_chunks("b1", ["v3", "a1"])
    assert both_legs(index, current_only=True) == ["a0"]
    assert len(both_legs(index)) == 9


def test_memory_filters_follow_every_write(index: ChunkIndex) -> None:
    # Searched between writes: an index that caches per-brain rows must keep them current
    memories(index, chunk("a", "walrus", facets=FACT_C1, importance=0.9), chunk("b", "walrus"))
    fact_c1 = {"facets": (("type", ("fact",)), ("client_id", ("c1",)))}
    assert both_legs(index, current_only=True, importance_min=0.5, **fact_c1) == ["a"]
    # When "a" is superseded, its facets and importance change, and "b" gains them
    memories(
        index,
        chunk("a", "walrus", facets={"type": "event"}, current=False, valid_to=T0),
        chunk("b", "walrus", facets=FACT_C1, importance=0.7, valid_from=T0),
    )
    # Then every filter sees the new values
    assert both_legs(index, current_only=True) == ["b"]
    assert both_legs(index, importance_min=0.5) == ["b"]
    assert both_legs(index, **fact_c1) == ["b"]
    assert both_legs(index, facets=(("type", ("event",)),)) == ["a"]
    assert both_legs(index, valid_at=T0) == ["b"]
    assert both_legs(index, valid_at=T0 - MS) == ["a"]
    # When "b" is staged again and activated, and "a" deleted, the filters still hold
    index.upsert([chunk("b2", "walrus", document_id="doc-b", facets=FACT_C1, active=False)], axis(0)[None, :])
    assert both_legs(index, **fact_c1) == ["b"]
    index.activate("b1", "doc-b", ["b2"])
    assert both_legs(index, current_only=True, **fact_c1) == ["b2"]
    assert index.delete_document("b1", "doc-a") == 1
    assert both_legs(index, facets=(("type", ("event",)),)) == []


def test_an_empty_path_prefix_matches_everything(index: ChunkIndex) -> None:
    index.upsert(
        [chunk("a", "walrus", path="x/1.md"), chunk("b", "walrus", path="y/1.md")], np.stack([axis(0)] * 2)
    )
    assert sorted(search(index, "walrus", path_prefixes=("",))) == ["a", "b"]


def test_an_unknown_brain_finds_nothing(index: ChunkIndex) -> None:
    index.upsert([chunk("a", "walrus")], axis(0)[None, :])
    assert (
        index.search(ChunkQuery(text="walrus", vector=axis(0).tolist(), filter=ChunkFilter(("nope",)))) == []
    )
    assert index.count("nope") == 0
    assert index.get_chunks("nope", "doc-a") == []


def test_several_brains_can_be_searched_together(index: ChunkIndex) -> None:
    index.upsert(
        [chunk("a", "walrus"), chunk("b", "walrus", brain_id="b2"), chunk("c", "walrus", brain_id="b3")],
        np.stack([axis(0), axis(0), axis(0)]),
    )
    hits = index.search(ChunkQuery(text="walrus", vector=axis(0).tolist(), filter=ChunkFilter(("b1", "b2"))))
    assert sorted(h.chunk.id for h in hits) == ["a", "b"]


# -- writes --------------------------------------------------------------------------------


def test_reupsert_replaces_text_vector_and_fields(index: ChunkIndex) -> None:
    index.upsert(
        [chunk("a", "old pelican words", tags=["t1"]), chunk("b", "other")], np.stack([axis(0), axis(1)])
    )
    index.upsert([chunk("a", "new cormorant words", tags=["t2"])], axis(2)[None, :])
    assert search(index, "pelican") == []
    assert search(index, "cormorant") == ["a"]
    assert search(index, "cormorant", tags=("t1",)) == []
    assert search(index, "cormorant", tags=("t2",)) == ["a"]
    assert search(index, "", axis(2))[0] == "a"
    assert index.count("b1") == 2


def test_a_chunk_written_again_with_its_own_vector_moves_only_its_flags(index: ChunkIndex) -> None:
    """As a value superseded is written: its text unchanged, the vector the index holds lent back,
    its flags moved (no longer current, valid until a time, other tags). Every leg and filter sees
    the new flags and the same vector; a vector that changes still replaces the old one."""
    first = toward(0, 1, 0.3)
    index.upsert(
        [chunk("v", "kettle descales weekly", tags=["t1"]), chunk("w", "other")], np.stack([first, axis(2)])
    )
    lent = index.get_vectors("b1", ["v"])["v"]
    ended = T0 + timedelta(days=3)
    superseded = chunk("v", "kettle descales weekly", tags=["t2"], current=False, valid_to=ended)
    index.upsert([superseded], np.asarray(lent, dtype=np.float32)[None, :])
    assert search(index, "kettle", current_only=True) == []
    assert "v" not in search(index, "", first, current_only=True)
    assert search(index, "", first)[0] == "v"
    assert search(index, "", first, tags=("t2",)) == ["v"] and search(index, "", first, tags=("t1",)) == []
    assert search(index, "", first, valid_at=ended + timedelta(hours=1)) == ["w"]
    hit = next(h for h in index.search(query("", first)) if h.chunk.id == "v")
    assert hit.vector_similarity == pytest.approx(1.0, abs=1e-6) and not hit.chunk.current
    assert np.allclose(index.get_vectors("b1", ["v"])["v"], first, atol=1e-6)
    index.upsert(
        [chunk("v", "kettle descales weekly", tags=["t1"])], np.asarray(lent, dtype=np.float32)[None, :]
    )
    assert search(index, "kettle", current_only=True) == ["v"]
    index.upsert([chunk("v", "kettle descales weekly", tags=["t1"])], axis(3)[None, :])
    assert search(index, "", axis(3))[0] == "v"
    assert next(h for h in index.search(query("", first)) if h.chunk.id == "v").vector_similarity < 0.5
    assert index.count("b1") == 2


def test_delete_document_removes_its_chunks_only(index: ChunkIndex) -> None:
    index.upsert(
        [
            chunk("a1", "puffin", document_id="d1"),
            chunk("a2", "puffin", document_id="d1", ordinal=1),
            chunk("b1", "puffin", document_id="d2"),
        ],
        np.stack([axis(0), axis(1), axis(2)]),
    )
    assert index.delete_document("b1", "d1") == 2
    assert index.delete_document("b1", "d1") == 0
    assert index.get_chunks("b1", "d1") == []
    assert search(index, "puffin", axis(0)) == ["b1"]
    assert index.count("b1") == 1


def test_drop_brain_removes_exactly_that_brains_chunks(index: ChunkIndex) -> None:
    # Given two brains, the first with two documents
    index.upsert(
        [
            chunk("a1", "osprey nest", document_id="d1", tags=["t"]),
            chunk("a2", "osprey dive", document_id="d1", ordinal=1),
            chunk("a3", "osprey call", document_id="d2", facets={"kind": "note"}),
            chunk("k1", "osprey kept", brain_id="b2"),
        ],
        np.stack([axis(0), axis(1), axis(2), axis(0)]),
    )
    # When the first brain is dropped / Then all its chunks go, and only its
    assert index.drop_brain("b1") == 3
    assert index.count("b1") == 0
    assert index.get_chunks("b1", "d1") == [] and index.get_many("b1", ["a1", "a2", "a3"]) == {}
    assert search(index, "osprey", axis(0)) == []
    assert search(index, "osprey", axis(0), tags=("t",)) == []
    assert index.count("b2") == 1
    b2 = ChunkFilter(("b2",))
    assert [h.chunk.id for h in index.search(ChunkQuery(text="osprey", vector=None, filter=b2))] == ["k1"]
    assert [h.chunk.id for h in index.search(ChunkQuery(text="", vector=axis(0).tolist(), filter=b2))] == [
        "k1"
    ]
    # And dropping again, or an unknown brain, removes nothing
    assert index.drop_brain("b1") == 0
    assert index.drop_brain("never-written") == 0
    # And the brain can be written again, holding only what is written now
    index.upsert([chunk("n1", "osprey returns", document_id="d1")], axis(3)[None, :])
    assert index.count("b1") == 1
    assert search(index, "osprey") == ["n1"]
    assert search(index, "", axis(3)) == ["n1"]
    assert [c.id for c in index.get_chunks("b1", "d1")] == ["n1"]
    assert index.get_vectors("b1", ["n1", "a1"]).keys() == {"n1"}


def test_scrub_leaves_the_live_chunks_as_they_were(index: ChunkIndex) -> None:
    if not isinstance(index, ScrubbableChunks):
        pytest.skip("this index keeps no files of its own")
    index.upsert(
        [chunk(f"c{i}", f"curlew flock {i}", document_id=f"d{i}") for i in range(6)],
        np.stack([toward(i, (i + 1) % DIM, 0.3) for i in range(6)]),
    )
    index.delete_document("b1", "d2")
    before = [index.search(query("curlew flock", axis(i), top_k=10)) for i in range(4)]
    index.scrub("b1")
    index.scrub("never-written")
    after = [index.search(query("curlew flock", axis(i), top_k=10)) for i in range(4)]
    assert [[(h.chunk.id, h.score) for h in hits] for hits in after] == [
        [(h.chunk.id, h.score) for h in hits] for hits in before
    ]
    assert index.count("b1") == 5


def test_searches_never_fail_while_a_brain_is_dropped(index: ChunkIndex) -> None:
    index.upsert([chunk("k", "grebe kept", brain_id="b2")], axis(0)[None, :])
    errors: list[str] = []
    done = threading.Event()

    def reader() -> None:
        both = ChunkFilter(("b1", "b2"))
        try:
            while not done.is_set():
                for vector in (axis(0).tolist(), None):
                    hits = index.search(ChunkQuery(text="grebe", vector=vector, filter=both, top_k=50))
                    assert "k" in {h.chunk.id for h in hits}
        except BaseException:  # surfaced, where it was raised, by the assertion below
            errors.append(traceback.format_exc())

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for cycle in range(15):
            index.upsert(
                [chunk(f"g{cycle}-{i}", f"grebe {i}", document_id=f"d{i}") for i in range(20)],
                np.stack([toward(0, i % DIM, 0.5) for i in range(20)]),
            )
            index.delete_document("b1", "d3")
            assert index.drop_brain("b1") == 19
    finally:
        done.set()
        for thread in threads:
            thread.join()
    assert not errors, errors[0]
    assert search(index, "grebe", axis(0)) == []


# -- rewrites: what the index holds of a document, and the vectors it lends -------------------


def test_fingerprints_name_every_chunk_of_the_document(index: ChunkIndex) -> None:
    index.upsert(
        [
            chunk("d_0", "first", document_id="d", fingerprint="e0:r0"),
            chunk("d_1", "second", document_id="d", ordinal=1, fingerprint="e1:r1"),
            chunk("d~s_0", "staged", document_id="d", active=False, fingerprint="e2:r2"),
            chunk("d_2", "no fingerprint", document_id="d", ordinal=2),
            chunk("e_0", "another document", document_id="e", fingerprint="e3:r3"),
            chunk("d_0-b2", "another brain", document_id="d", brain_id="b2", fingerprint="e4:r4"),
        ],
        np.stack([axis(i) for i in range(6)]),
    )
    assert index.fingerprints("b1", "d") == {"d_0": "e0:r0", "d_1": "e1:r1", "d~s_0": "e2:r2", "d_2": ""}
    index.upsert(
        [chunk("d_1", "second, rewritten", document_id="d", ordinal=1, fingerprint="e5:r5")], axis(7)[None, :]
    )
    index.delete_chunks("b1", ["d~s_0"])
    assert index.fingerprints("b1", "d") == {"d_0": "e0:r0", "d_1": "e5:r5", "d_2": ""}
    assert index.fingerprints("b1", "missing") == {}
    assert index.fingerprints("b9", "d") == {}


def test_get_vectors_lends_the_stored_unit_vectors(index: ChunkIndex) -> None:
    index.upsert(
        [chunk("a", "alpha"), chunk("b", "beta"), chunk("c", "gamma", brain_id="b2")],
        np.stack([axis(0) * 3.0, toward(1, 2, 0.5), axis(3)]),
    )
    index.upsert([chunk("b", "beta again")], np.stack([axis(4) * 0.5]))  # replaced: its new vector
    found = index.get_vectors("b1", ["a", "b", "c", "ghost", "a"])
    assert sorted(found) == ["a", "b"]  # another brain's chunk and unknown ids are left out
    np.testing.assert_allclose(found["a"], axis(0), atol=1e-6)
    np.testing.assert_allclose(found["b"], axis(4), atol=1e-6)
    assert index.get_vectors("b1", []) == {}


# -- reads by chunk id ----------------------------------------------------------------------


def test_get_chunk_reads_a_live_chunk_as_get_chunks_does(index: ChunkIndex) -> None:
    original = chunk(
        "a",
        "the whole body text",
        title="A title",
        path="notes/deep/a.md",
        ordinal=0,
        start=7,
        end=26,
        tags=["x"],
        fingerprint="e1:r1",
        facets={"type": "fact", "client_id": "c-1"},
        importance=0.5,
    )
    index.upsert([original, chunk("b", "other text")], np.stack([axis(0), axis(1)]))
    index.set_context("b1", "doc-a", "what came before")
    got = index.get_chunk("b1", "a")
    assert got is not None
    assert (got.text, got.path, got.ordinal, got.facets) == (
        "the whole body text",
        "notes/deep/a.md",
        0,
        {"type": "fact", "client_id": "c-1"},
    )
    assert got.active and got.context == "what came before"
    assert (
        got
        == index.get_chunks("b1", "doc-a")[0]
        == original.model_copy(update={"context": "what came before"})
    )


def test_get_chunk_reads_a_staged_chunk_as_inactive(index: ChunkIndex) -> None:
    index.upsert([live("d_0", "live text"), staged("d~s_0", "staged text")], np.stack([axis(0), axis(1)]))
    got = index.get_chunk("b1", "d~s_0")
    assert got is not None and (got.text, got.active) == ("staged text", False)
    index.activate("b1", "d", ["d~s_0"])
    got = index.get_chunk("b1", "d~s_0")
    assert got is not None and got.active
    assert index.get_chunk("b1", "d_0") is None  # removed by the activation


def test_get_chunk_is_none_for_an_unknown_id_another_brains_chunk_or_a_deleted_one(index: ChunkIndex) -> None:
    index.upsert(
        [
            chunk("a", "alpha", document_id="d1"),
            chunk("a2", "beta", document_id="d1", ordinal=1),
            chunk("c", "gamma", brain_id="b2"),
        ],
        np.stack([axis(0), axis(1), axis(2)]),
    )
    assert index.get_chunk("b1", "ghost") is None
    assert index.get_chunk("b1", "c") is None  # held, but by brain b2
    assert index.get_chunk("b9", "a") is None  # a brain never written to
    got = index.get_chunk("b2", "c")
    assert got is not None and got.brain_id == "b2"
    index.delete_document("b1", "d1")
    assert index.get_chunk("b1", "a") is None and index.get_chunk("b1", "a2") is None
    index.upsert([chunk("s", "staged", active=False)], axis(3)[None, :])
    index.delete_chunks("b1", ["s"])
    assert index.get_chunk("b1", "s") is None


def test_get_many_returns_exactly_the_brains_chunks_among_the_ids(index: ChunkIndex) -> None:
    index.upsert(
        [
            chunk("a", "alpha", document_id="d", ordinal=0),
            chunk("b", "beta", document_id="d", ordinal=1),
            chunk("s", "staged", document_id="d", ordinal=2, active=False),
            chunk("n", "not asked"),
            chunk("c", "gamma", brain_id="b2"),
        ],
        np.stack([axis(i) for i in range(5)]),
    )
    found = index.get_many("b1", ["b", "ghost", "c", "s", "a", "b"])
    assert sorted(found) == ["a", "b", "s"]
    assert all(key == c.id and c.brain_id == "b1" for key, c in found.items())
    assert found["a"].text == "alpha" and found["s"].active is False
    by_document = {c.id: c for c in index.get_chunks("b1", "d")}
    assert found == by_document
    assert index.get_many("b1", []) == {}
    assert index.get_many("b1", ["ghost", "c"]) == {}
    assert index.get_many("b9", ["a"]) == {}
    assert sorted(index.get_many("b2", ["a", "c"])) == ["c"]


def test_get_many_takes_more_ids_than_one_request_holds(index: ChunkIndex) -> None:
    """1,150 held ids among 1,300 asked: past SQLite's 500-id chunks and OpenSearch's 1,000-id pages."""
    held = [chunk(f"h{i:04d}", f"text {i}", document_id=f"d{i // 100}", ordinal=i % 100) for i in range(1150)]
    theirs = [chunk(f"t{i:03d}", "other brain", brain_id="b2", document_id="o", ordinal=i) for i in range(75)]
    vectors = np.random.default_rng(3).normal(size=(len(held) + len(theirs), DIM)).astype(np.float32)
    index.upsert([*held, *theirs], vectors)
    asked = [c.id for c in held] + [c.id for c in theirs] + [f"ghost{i}" for i in range(75)]
    asked = asked[::2] + asked[1::2]  # interleaved, so every request mixes held and not held
    found = index.get_many("b1", asked)
    assert sorted(found) == [c.id for c in held]
    assert found["h1149"].text == "text 1149" and found["h1149"].ordinal == 49


def test_rewriting_only_what_changed_leaves_the_index_as_a_full_rewrite_does(index: ChunkIndex) -> None:
    """What a rewrite of a document does: upsert its changed chunks (one with a stored vector),
    delete the ones it no longer has, leave the rest. Brain b1 is rewritten that way, brain b2
    gets the final chunks written once: both answer every search alike. Scores never tie here
    (a tie is broken by insertion order, which the two brains do not share)."""
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(6, DIM)).astype(np.float32)
    texts = ["heron " * (i + 1) + f"words {w}" for i, w in enumerate(["one", "two", "three", "four"])]
    old = [chunk(f"d_{i}", text, document_id="d", ordinal=i) for i, text in enumerate(texts)]
    new = [*old[:2], chunk("d_2", "grebe heron heron grebe words", document_id="d", ordinal=2)]
    others = [chunk("o", "heron elsewhere today"), chunk("p", "grebe elsewhere")]
    index.upsert([*old, *others], vectors)
    search(index, "heron", vectors[0])  # an index that caches rows has them cached now
    lent = index.get_vectors("b1", ["d_3"])
    index.upsert([new[2]], lent["d_3"][None, :])  # the changed chunk, with d_3's vector
    index.delete_chunks("b1", ["d_3"])

    def in_b2(c: Chunk) -> Chunk:
        return c.model_copy(update={"id": f"f-{c.id}", "brain_id": "b2"})

    index.upsert([in_b2(c) for c in [*new, *others]], vectors[[0, 1, 3, 4, 5]])
    assert [in_b2(c) for c in index.get_chunks("b1", "d")] == index.get_chunks("b2", "d")
    for text in ["heron", "grebe", "words", "heron grebe elsewhere"]:
        probe = rng.normal(size=DIM).astype(np.float32)
        for vector in (None, probe):
            got = index.search(query(text, vector))
            want = index.search(query(text, vector, brain_ids=("b2",)))
            assert [f"f-{h.chunk.id}" for h in got] == [h.chunk.id for h in want]
            assert [h.score for h in got] == pytest.approx([h.score for h in want])
    assert index.count("b1") == index.count("b2") == 5


# -- staged versions: upserted inactive under new ids, then activated or dropped ---------------


def staged(cid: str, text: str, ordinal: int = 0, **fields: object) -> Chunk:
    """A chunk of a new version of document "d", not live yet."""
    return chunk(cid, text, document_id="d", ordinal=ordinal, active=False, **fields)


def live(cid: str, text: str, ordinal: int = 0, **fields: object) -> Chunk:
    return chunk(cid, text, document_id="d", ordinal=ordinal, **fields)


def ids_and_active(index: ChunkIndex, document_id: str = "d", brain_id: str = "b1") -> list[tuple[str, bool]]:
    return [(c.id, c.active) for c in index.get_chunks(brain_id, document_id)]


def test_staged_chunks_stay_hidden_until_activate_swaps_them_in(index: ChunkIndex) -> None:
    # Given a live version of "d" (searched once, so an index that caches rows has them cached)
    index.upsert(
        [live("d_0", "old grebe words"), live("d_1", "old grebe tail", 1), chunk("o", "grebe elsewhere")],
        np.stack([axis(0), axis(1), axis(2)]),
    )
    assert sorted(search(index, "grebe", axis(0))) == ["d_0", "d_1", "o"]
    # When a new version is staged under other ids
    index.upsert(
        [staged("d~j_0", "new grebe words"), staged("d~j_1", "new grebe tail", 1)], np.stack([axis(0)] * 2)
    )
    # Then searches still see the live version only, while the staged chunks are stored
    assert sorted(search(index, "grebe", axis(0))) == ["d_0", "d_1", "o"]
    assert search(index, "new") == [] and search(index, "", axis(0))[0] == "d_0"
    assert sorted(search(index, "new", active_only=False)) == ["d~j_0", "d~j_1"]
    assert index.count("b1") == 5
    # When the staged version is activated
    index.activate("b1", "d", ["d~j_0", "d~j_1"])
    # Then it is the document, found by both legs, and the old version is gone
    assert sorted(search(index, "grebe", axis(0))) == ["d~j_0", "d~j_1", "o"]
    assert search(index, "old", active_only=False) == []
    assert sorted(search(index, "", axis(0), top_k=2)) == ["d~j_0", "d~j_1"]
    assert all(h.chunk.active for h in index.search(query("new")))
    assert ids_and_active(index) == [("d~j_0", True), ("d~j_1", True)]
    assert index.count("b1") == 3


def test_activate_is_idempotent_and_ignores_unknown_ids(index: ChunkIndex) -> None:
    index.upsert(
        [live("d_0", "old tern"), staged("s0", "new tern"), staged("s1", "new tern tail", 1)],
        np.stack([axis(0), axis(1), axis(2)]),
    )
    index.activate("b1", "d", ["s0", "ghost", "s1"])
    once = (ids_and_active(index), sorted(search(index, "tern", axis(1))), index.count("b1"))
    index.activate("b1", "d", ["s0", "ghost", "s1"])  # a retry
    assert (ids_and_active(index), sorted(search(index, "tern", axis(1))), index.count("b1")) == once
    assert once == ([("s0", True), ("s1", True)], ["s0", "s1"], 2)


def test_delete_chunks_drops_only_the_named_staged_chunks(index: ChunkIndex) -> None:
    index.upsert(
        [
            live("d_0", "live skua"),
            live("d_1", "live skua", 1),
            staged("s0", "staged skua"),
            staged("s1", "x", 1),
        ],
        np.stack([axis(0), axis(1), axis(2), axis(3)]),
    )
    assert index.delete_chunks("b1", ["s0", "s1", "ghost", "s0"]) == 2
    assert index.delete_chunks("b1", ["s0"]) == 0
    assert index.delete_chunks("b2", ["d_0"]) == 0  # another brain's call cannot reach b1's chunks
    assert index.delete_chunks("b1", []) == 0
    assert sorted(search(index, "skua", axis(0))) == ["d_0", "d_1"]
    assert search(index, "staged", active_only=False) == []
    assert ids_and_active(index) == [("d_0", True), ("d_1", True)]
    assert index.count("b1") == 2


def test_activate_keeps_what_was_staged_and_touches_nothing_else(index: ChunkIndex) -> None:
    # Given: of the planned s0..s2 only s0 and s1 were upserted; "d" also exists in brain b2, and
    # document "e" of b1 has a staged chunk of its own
    index.upsert(
        [
            live("d_0", "old auk"),
            staged("s0", "new auk"),
            staged("s1", "new auk", 1),
            live("d_0-b2", "auk", brain_id="b2"),
            chunk("e0", "staged auk of e", document_id="e", active=False),
        ],
        np.stack([axis(0), axis(1), axis(2), axis(3), axis(4)]),
    )
    # When
    index.activate("b1", "d", ["s0", "s1", "s2", "e0"])
    # Then: just the present ones are the document; b2 and document "e" are as they were
    assert ids_and_active(index) == [("s0", True), ("s1", True)]
    assert ids_and_active(index, brain_id="b2") == [("d_0-b2", True)]
    assert ids_and_active(index, "e") == [("e0", False)]
    assert (index.count("b1"), index.count("b2")) == (3, 1)


def test_activate_with_no_chunk_ids_leaves_the_document_empty(index: ChunkIndex) -> None:
    index.upsert([live("d_0", "murre"), staged("s0", "murre"), chunk("o", "murre")], np.stack([axis(0)] * 3))
    index.activate("b1", "d", [])
    assert index.get_chunks("b1", "d") == []
    assert search(index, "murre", axis(0), active_only=False) == ["o"]


def test_every_write_is_seen_by_the_next_search(index: ChunkIndex) -> None:
    # Searches between writes: an index that caches per-brain rows must keep them current
    index.upsert([chunk("a", "heron")], axis(0)[None, :])
    assert search(index, "", axis(0)) == ["a"]
    index.upsert([chunk("b", "heron"), chunk("a", "heron moved here")], np.stack([axis(0), axis(1)]))
    hits = index.search(query("", axis(0)))
    assert [(h.chunk.id, round(h.vector_similarity or 0, 3)) for h in hits] == [("b", 1.0), ("a", 0.0)]
    assert index.delete_document("b1", "doc-b") == 1
    assert search(index, "", axis(0)) == ["a"]
    assert search(index, "", axis(0), top_k=1, candidate_pool=1) == ["a"]  # no slot kept for "b"
    index.upsert([chunk("c", "heron", active=False, tags=["t"])], axis(0)[None, :])
    assert search(index, "heron", axis(0)) == ["a"]
    assert search(index, "heron", axis(0), active_only=False) == ["c", "a"]
    assert search(index, "heron", axis(0), active_only=False, tags=("t",)) == ["c"]


def test_a_chunk_id_repeated_in_one_upsert_keeps_the_last(index: ChunkIndex) -> None:
    index.upsert([chunk("z", "first")], axis(5)[None, :])
    assert search(index, "", axis(5)) == ["z"]
    index.upsert([chunk("x", "older text"), chunk("x", "newer text")], np.stack([axis(2), axis(3)]))
    assert index.count("b1") == 2
    assert search(index, "older") == []
    hit = next(h for h in index.search(query("", axis(2))) if h.chunk.id == "x")
    assert hit.chunk.text == "newer text"
    assert hit.vector_similarity == pytest.approx(0.0, abs=1e-6)


def test_get_chunks_returns_ordinal_order(index: ChunkIndex) -> None:
    chunks = [chunk(f"c{i}", f"part {i}", document_id="d", ordinal=i) for i in (2, 0, 3, 1)]
    index.upsert(chunks, np.stack([axis(i) for i in range(4)]))
    assert [c.ordinal for c in index.get_chunks("b1", "d")] == [0, 1, 2, 3]


def test_upsert_rejects_vectors_that_do_not_fit(index: ChunkIndex) -> None:
    with pytest.raises(InvalidInput):
        index.upsert([chunk("a", "x"), chunk("b", "y")], axis(0)[None, :])
    with pytest.raises(InvalidInput):
        index.upsert([chunk("a", "x")], np.zeros((1, DIM + 1), dtype=np.float32))
    with pytest.raises(InvalidInput):
        index.upsert([chunk("a", "x")], np.full((1, DIM), np.nan, dtype=np.float32))
    assert index.count("b1") == 0


def test_a_query_vector_of_the_wrong_size_is_rejected(index: ChunkIndex) -> None:
    with pytest.raises(InvalidInput):
        index.search(query("x", np.zeros(DIM + 1, dtype=np.float32)))


NASTY = [
    '"',
    'unbalanced "quote',
    "*",
    "zebra*",
    "AND",
    "OR NOT AND",
    "NEAR(zebra river)",
    "- zebra",
    "title:zebra",
    "text : zebra",
    "(zebra",
    "zebra)",
    "{title text}: zebra",
    "^zebra",
    "zebra + river",
    "c'est déjà l'été",
    "emoji 🦓 zebra",
    "\x00 nul",
    "'; DROP TABLE chunks; --",
    " ",
    "",
]


@pytest.mark.parametrize("text", NASTY)
def test_fts_syntax_in_query_text_never_raises(index: ChunkIndex, text: str) -> None:
    index.upsert(
        [chunk("a", "zebra by the river, déjà vu"), chunk("b", "other")], np.stack([axis(0), axis(1)])
    )
    index.search(query(text))
    hits = index.search(query(text, axis(0)))
    assert hits and hits[0].chunk.id == "a"


def test_diacritics_and_case_are_folded(index: ChunkIndex) -> None:
    index.upsert([chunk("a", "Café Déjà"), chunk("b", "other")], np.stack([axis(0), axis(1)]))
    assert search(index, "cafe DEJA") == ["a"]


def test_concurrent_upserts_and_searches_do_not_fail(index: ChunkIndex) -> None:
    errors: list[BaseException] = []

    def guarded(work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                work()
            except BaseException as exc:  # surfaced by the assertion below
                errors.append(exc)

        return run

    def writer(w: int) -> Callable[[], None]:
        def work() -> None:
            for i in range(15):
                index.upsert(
                    [
                        chunk(f"w{w}-{i}-{j}", f"gannet colony {w} {i}", document_id=f"d{w}-{i}")
                        for j in range(3)
                    ],
                    np.stack([toward(0, (w + j) % DIM, 0.5) for j in range(3)]),
                )
                if i % 5 == 4:
                    index.delete_document("b1", f"d{w}-{i - 1}")

        return work

    def reader() -> None:
        for _ in range(30):
            for hit in index.search(query("gannet colony", axis(0), tags=(), top_k=5)):
                assert hit.chunk.text.startswith("gannet")

    threads = [threading.Thread(target=guarded(writer(w))) for w in range(3)]
    threads += [threading.Thread(target=guarded(reader)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert index.count("b1") == 3 * (15 - 3) * 3


# -- boolean full-text queries and any-of tag groups --------------------------------------------

BIRDS = {
    "a": "the heron waded through the marsh",
    "b": "a heron nested by the river",
    "c": "otters play in the river",
    "d": "marsh birds and river birds",
    "e": "new york is a city by the river",
    "f": "york is new to me",
}


def birds(index: ChunkIndex) -> None:
    chunks = [chunk(cid, text) for cid, text in BIRDS.items()]
    index.upsert(chunks, np.stack([axis(i) for i in range(len(chunks))]))


def matching(index: ChunkIndex, text: str, **options: object) -> list[str]:
    """The ids a boolean query finds (BM25 leg alone), sorted."""
    return sorted(h.chunk.id for h in index.search(query("", None, boolean=parse(text), top_k=50, **options)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("heron AND marsh", ["a"]),
        ("heron marsh", ["a"]),  # adjacent terms: an implicit AND
        ("heron & marsh", ["a"]),
        ("heron OR otters", ["a", "b", "c"]),
        ("heron | otters", ["a", "b", "c"]),
        ("heron NOT river", ["a"]),
        ("river -heron", ["c", "d", "e"]),
        ("river AND !heron", ["c", "d", "e"]),
        ("(river OR marsh) NOT heron", ["c", "d", "e"]),  # NOT drops what river and marsh found
        ('"new york"', ["e"]),  # f holds both words, not side by side
        ('"york new"', []),
        ("new AND york", ["e", "f"]),
        ("heron AND marsh OR otters", ["a", "c"]),  # AND binds tighter than OR
        ("heron AND (marsh OR otters)", ["a"]),
        ("otters OR heron river", ["b", "c"]),
        ("river NOT (heron OR otters)", ["d", "e"]),
        ("river NOT (NOT otters NOT heron)", ["b", "c"]),  # river AND (otters OR heron)
        ("heron AND otters", []),
        ("walrus", []),
    ],
)
def test_a_boolean_query_keeps_exactly_the_chunks_it_matches(
    index: ChunkIndex, text: str, expected: list[str]
) -> None:
    birds(index)
    assert matching(index, text) == expected


def test_a_boolean_query_replaces_the_text_of_the_bm25_leg(index: ChunkIndex) -> None:
    birds(index)
    hits = index.search(query("otters", boolean=parse("heron NOT river")))
    assert [h.chunk.id for h in hits] == ["a"]
    assert hits[0].bm25_rank == 1 and hits[0].bm25_score is not None and hits[0].bm25_score > 0


def test_boolean_matches_rank_by_bm25_of_the_positive_terms(index: ChunkIndex) -> None:
    index.upsert(
        [
            chunk("once", "zebra grass plain dust"),
            chunk("twice", "zebra zebra grass plain"),
            chunk("gone", "zebra zebra zebra lion"),
            chunk("other", "grass plain dust wind"),
        ],
        np.stack([axis(0), axis(1), axis(2), axis(3)]),
    )
    hits = index.search(query("", boolean=parse("zebra AND grass NOT lion")))
    assert [h.chunk.id for h in hits] == ["twice", "once"]
    assert [h.bm25_rank for h in hits] == [1, 2]
    scores = [h.bm25_score for h in hits]
    assert scores[0] is not None and scores[1] is not None and scores[0] > scores[1] > 0


def test_a_phrase_sits_within_one_field_and_a_term_in_any(index: ChunkIndex) -> None:
    index.upsert(
        [chunk("split", "york city", title="New"), chunk("titled", "a city", title="New York")],
        np.stack([axis(0), axis(1)]),
    )
    assert matching(index, '"new york"') == ["titled"]
    assert matching(index, "new AND york") == ["split", "titled"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("zebra*", ["a"]),
        ('"zebra*"', ["a"]),
        ("^zebra", ["a"]),
        ("zebra:", ["a"]),
        ("zebra + river", ["a"]),
        ('"zebra" AND "river"', ["a"]),
        ("déjà OR nothing", ["a"]),
        ("NEAR(zebra river)", []),  # near is a word to find, not FTS5's NEAR
        ("zebra NEAR river", []),
        ("title:zebra", []),  # the phrase "title zebra", not a column filter
        ("{title text}: zebra", []),
        ("'; DROP TABLE chunks; --", []),
    ],
)
def test_fts_syntax_in_a_boolean_query_is_only_ever_words(
    index: ChunkIndex, text: str, expected: list[str]
) -> None:
    index.upsert(
        [chunk("a", "zebra by the river, déjà vu"), chunk("b", "other")], np.stack([axis(0), axis(1)])
    )
    assert matching(index, text) == expected
    assert matching(index, "zebra") == ["a"]  # the index is still there


@pytest.mark.parametrize(
    "tree",
    [
        Not(Term("heron")),
        And((Not(Term("heron")), Not(Term("river")))),
        Or((Term("heron"), Not(Term("river")))),
        Term('zeb"ra'),
        Term("Heron"),
        Phrase(("new", "york*")),
        Or(()),
    ],
)
def test_a_boolean_tree_parse_would_not_make_is_refused(index: ChunkIndex, tree: BoolQuery) -> None:
    birds(index)
    with pytest.raises(InvalidInput):
        index.search(query("", boolean=tree))


def test_a_boolean_query_stays_within_its_brains(index: ChunkIndex) -> None:
    index.upsert(
        [chunk("a", "heron marsh"), chunk("b", "heron marsh", brain_id="b2"), chunk("c", "heron river")],
        np.stack([axis(0), axis(1), axis(2)]),
    )
    assert matching(index, "heron NOT river") == ["a"]
    assert matching(index, "heron NOT river", brain_ids=("b1", "b2")) == ["a", "b"]
    assert matching(index, "heron", brain_ids=("b2",)) == ["b"]


def test_a_boolean_query_applies_the_filter(index: ChunkIndex) -> None:
    index.upsert(
        [chunk("a", "heron marsh", tags=["x"]), chunk("b", "heron marsh", tags=["y"]), chunk("c", "heron")],
        np.stack([axis(0), axis(1), axis(2)]),
    )
    assert matching(index, "heron marsh", any_tags=(("x", "z"),)) == ["a"]
    assert matching(index, "heron NOT marsh", tags=("x",)) == []


def test_any_tags_overlap_within_a_group_and_every_group_must_hold(index: ChunkIndex) -> None:
    memories(
        index,
        chunk("p", "walrus", tags=["red", "cat"], facets={"type": "fact"}),
        chunk("q", "walrus", tags=["blue", "cat"]),
        chunk("r", "walrus", tags=["red", "dog"], facets={"type": "event"}),
        chunk("s", "walrus", tags=["green"]),
        chunk("t", "walrus"),
    )
    assert both_legs(index, any_tags=(("red", "blue"),)) == ["p", "q", "r"]
    assert both_legs(index, any_tags=(("red", "blue"), ("dog", "green"))) == ["r"]
    assert both_legs(index, any_tags=(("red", "blue"),), tags=("cat",)) == ["p", "q"]
    assert both_legs(index, any_tags=(("red",),), facets=(("type", ("fact",)),)) == ["p"]
    assert both_legs(index, any_tags=(("Red", "gree"),)) == []  # exact, case-sensitive tags
    assert both_legs(index, any_tags=((),)) == []  # an empty group matches nothing
    assert both_legs(index, any_tags=()) == ["p", "q", "r", "s", "t"]


def test_held_counts_each_documents_active_chunks(index: ChunkIndex) -> None:
    index.upsert(
        [
            chunk("a0", "alpha", document_id="A", ordinal=0),
            chunk("a1", "alpha two", document_id="A", ordinal=1),
            chunk("b0", "beta", document_id="B"),
            chunk("s0", "staged", document_id="S", active=False),
        ],
        np.stack([axis(0), axis(1), axis(2), axis(3)]),
    )
    index.upsert([chunk("o0", "other brain", document_id="O", brain_id="b2")], axis(4)[None, :])
    assert index.held("b1") == {"A": 2, "B": 1}
    index.delete_document("b1", "A")
    assert index.held("b1") == {"B": 1}
    assert index.held("nobody") == {}


# -- SQLite only ---------------------------------------------------------------------------


@pytest.fixture
def sqlite_paths(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "chunks.db", tmp_path / "vectors"


def test_sqlite_index_persists_across_reopen(sqlite_paths: tuple[Path, Path]) -> None:
    first = SqliteChunkIndex(*sqlite_paths, DIM)
    stored = [
        chunk("a", "albatross", tags=["sea"]),
        chunk("b", "other"),
        chunk("c", "gone", document_id="dx"),
    ]
    first.upsert(stored, np.stack([axis(0), axis(1), axis(2)]))
    first.upsert([chunk("b", "replaced petrel")], axis(3)[None, :])
    first.delete_document("b1", "dx")
    first.close()

    second = SqliteChunkIndex(*sqlite_paths, DIM)
    try:
        assert second.count("b1") == 2
        assert search(second, "albatross", axis(0), tags=("sea",)) == ["a"]
        assert search(second, "", axis(3))[0] == "b"
        assert search(second, "petrel") == ["b"]
        second.upsert([chunk("d", "albatross again")], axis(0)[None, :])
        assert sorted(search(second, "albatross")) == ["a", "d"]
    finally:
        second.close()


def test_sqlite_sees_writes_made_through_another_instance(sqlite_paths: tuple[Path, Path]) -> None:
    # Given two instances on the same files (as two processes would be), one of them searching
    reader, writer = SqliteChunkIndex(*sqlite_paths, DIM), SqliteChunkIndex(*sqlite_paths, DIM)
    try:
        writer.upsert([chunk("a", "albatross")], axis(0)[None, :])
        assert search(reader, "albatross", axis(0)) == ["a"]
        # When the other one writes (its vectors land past the reader's memory map)
        writer.upsert([chunk(f"n{i}", "petrel") for i in range(20)], np.stack([axis(1)] * 20))
        writer.upsert([chunk("a", "albatross moved")], axis(2)[None, :])
        # Then the reader finds the new state through both legs
        assert len(search(reader, "petrel", axis(1), top_k=30)) == 21
        assert len(search(reader, "petrel", top_k=30)) == 20
        assert search(reader, "", axis(2))[0] == "a"
        reader.upsert([chunk("r", "written by the reader")], axis(3)[None, :])
        assert search(writer, "", axis(3))[0] == "r"
        assert search(reader, "", axis(3))[0] == "r"
    finally:
        reader.close()
        writer.close()


def test_sqlite_common_terms_are_never_dropped(sqlite_paths: tuple[Path, Path]) -> None:
    # Given: 12 chunks with a common word, 2 with a rare one
    index = SqliteChunkIndex(*sqlite_paths, DIM)
    try:
        chunks = [chunk(f"c{i:02d}", f"common words number {i}") for i in range(12)]
        chunks += [chunk("r1", "rare heron common"), chunk("r2", "rare heron")]
        index.upsert(chunks, np.stack([axis(i % DIM) for i in range(len(chunks))]))
        # When / Then: the rare term ranks its chunks first and the common term still counts
        assert sorted(search(index, "common heron", top_k=20)[:2]) == ["r1", "r2"]
        assert len(search(index, "common heron", top_k=20)) == 14
        assert len(search(index, "common words", top_k=20)) == 13
    finally:
        index.close()


def test_sqlite_torn_vector_file_is_trimmed_on_open(sqlite_paths: tuple[Path, Path]) -> None:
    index = SqliteChunkIndex(*sqlite_paths, DIM)
    index.upsert([chunk("a", "albatross")], axis(0)[None, :])
    index.close()
    vector_file = next(sqlite_paths[1].iterdir())
    with vector_file.open("ab") as fh:
        fh.write(b"\x00\x01\x02")  # a crash mid-append
    reopened = SqliteChunkIndex(*sqlite_paths, DIM)
    try:
        reopened.upsert([chunk("b", "petrel")], axis(1)[None, :])
        assert search(reopened, "", axis(1))[0] == "b"
        assert search(reopened, "", axis(0))[0] == "a"
    finally:
        reopened.close()


def test_sqlite_opens_an_index_made_before_fingerprints(sqlite_paths: tuple[Path, Path]) -> None:
    # Given an index whose chunks table has no fingerprint column (an earlier version's)
    first = SqliteChunkIndex(*sqlite_paths, DIM)
    first.upsert([chunk("a", "albatross", document_id="d")], axis(0)[None, :])
    first.close()
    conn = sqlite3.connect(sqlite_paths[0])
    conn.execute("ALTER TABLE chunks DROP COLUMN fingerprint")
    conn.commit()
    conn.close()
    # When it is opened / Then its chunks read as unknown and new ones keep their fingerprints
    reopened = SqliteChunkIndex(*sqlite_paths, DIM)
    try:
        assert reopened.fingerprints("b1", "d") == {"a": ""}
        reopened.upsert([chunk("b", "petrel", document_id="d", fingerprint="e:r")], axis(1)[None, :])
        assert reopened.fingerprints("b1", "d") == {"a": "", "b": "e:r"}
        assert search(reopened, "albatross") == ["a"]
    finally:
        reopened.close()


def _brain_seq(db_path: Path, brain_id: str) -> int | None:
    conn = sqlite3.connect(db_path)
    try:
        row = conn.execute("SELECT seq FROM brain_state WHERE brain_id = ?", (brain_id,)).fetchone()
        return None if row is None else int(row[0])
    finally:
        conn.close()


def _tables(db_path: Path, pattern: str) -> list[str]:
    conn = sqlite3.connect(db_path)
    try:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE ?", (pattern,))]
    finally:
        conn.close()


MARKER = "quillwortzyx"
MARKED = MARKER[:9].encode()  # what any copy holds: FTS5 keeps the stemmed term


def _stored_bytes(db_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (db_path, db_path.with_name(db_path.name + "-wal")) if p.exists())


def test_sqlite_drop_brain_leaves_no_file_or_table_of_the_brain(sqlite_paths: tuple[Path, Path]) -> None:
    # Given a brain with an ANN index, compacted once (files of a second epoch), and another brain
    index = SqliteChunkIndex(*sqlite_paths, DIM, ann_min_rows=20, background_maintenance=False)
    try:
        rng = np.random.default_rng(3)
        vectors = rng.standard_normal((40, DIM)).astype(np.float32)
        index.upsert([chunk(f"c{i}", f"wren {i}", tags=["t"], facets={"k": "v"}) for i in range(40)], vectors)
        index.upsert([chunk("k", "wren kept", brain_id="b2")], axis(0)[None, :])
        index.upsert([chunk("m", f"{MARKER} wren " + "song " * 900)], axis(1)[None, :])
        index.delete_document("b1", "doc-c0")
        index.compact("b1")
        vectors_dir = sqlite_paths[1]
        assert {p.name for p in vectors_dir.iterdir() if p.name.startswith("b1")} >= {
            "b1~1.f32",
            "b1~1.faiss",
        }
        seq = _brain_seq(sqlite_paths[0], "b1")
        assert MARKED in _stored_bytes(sqlite_paths[0])
        # When it is dropped, then scrubbed
        assert index.drop_brain("b1") == 40
        assert sorted(p.name for p in vectors_dir.iterdir()) == ["b2.f32"]
        index.scrub("b1")
        # Then none of its files, tables, rows or text is left; the other brain's are
        assert sorted(p.name for p in vectors_dir.iterdir()) == ["b2.f32"]
        assert MARKED not in _stored_bytes(sqlite_paths[0])
        assert _brain_seq(sqlite_paths[0], "b1") is None
        assert _tables(sqlite_paths[0], f"chunks_fts_{seq}%") == []
        conn = sqlite3.connect(sqlite_paths[0])
        try:
            for table in ("chunks", "chunk_tags", "chunk_facets"):
                assert conn.execute(f"SELECT count(*) FROM {table} WHERE brain_id = 'b1'").fetchone() == (0,)
        finally:
            conn.close()
        assert search(index, "wren", axis(0), brain_ids=("b2",)) == ["k"]
        # And the brain written again starts past the dropped one's epochs, with no ANN index
        index.upsert([chunk("n", "wren anew")], axis(1)[None, :])
        assert search(index, "wren", axis(1)) == ["n"]
        assert sorted(p.name for p in vectors_dir.iterdir()) == ["b1~2.f32", "b2.f32"]
    finally:
        index.close()


def test_sqlite_another_instance_forgets_a_dropped_brain(sqlite_paths: tuple[Path, Path]) -> None:
    # Given two instances on the same files, the reader having cached the brain's rows and vectors
    reader, writer = SqliteChunkIndex(*sqlite_paths, DIM), SqliteChunkIndex(*sqlite_paths, DIM)
    try:
        writer.upsert([chunk("a", "albatross"), chunk("b", "petrel")], np.stack([axis(0), axis(1)]))
        assert search(reader, "", axis(0)) == ["a", "b"]
        assert reader.get_vectors("b1", ["a"]).keys() == {"a"}
        # When the writer drops the brain and writes it again, in as many writes as before
        assert writer.drop_brain("b1") == 2
        writer.upsert(
            [chunk("c", "cormorant"), chunk("d", "cormorant"), chunk("e", "cormorant")],
            np.stack([axis(2), axis(3), axis(4)]),
        )
        # Then the reader serves the new brain, not what it kept of the old one
        hits = reader.search(query("", axis(4)))
        assert [h.chunk.id for h in hits] == ["e", "c", "d"]
        assert hits[0].vector_similarity == pytest.approx(1.0, abs=1e-6)
        assert np.allclose(reader.get_vectors("b1", ["c"])["c"], axis(2))
        assert search(reader, "albatross") == []
        reader.upsert([chunk("f", "cormorant diving")], axis(5)[None, :])
        assert sorted(search(writer, "cormorant")) == ["c", "d", "e", "f"]
    finally:
        reader.close()
        writer.close()


def _vector_rows(vectors_dir: Path) -> np.ndarray:
    rows = [np.fromfile(p, dtype="<f4").reshape(-1, DIM) for p in vectors_dir.glob("*.f32")]
    return np.concatenate(rows) if rows else np.zeros((0, DIM), np.float32)


def _hits(index: ChunkIndex, vector: np.ndarray) -> list[tuple[str, float]]:
    return [(h.chunk.id, round(h.score, 9)) for h in index.search(query("sedge marsh", vector, top_k=50))]


def test_sqlite_scrub_leaves_nothing_of_a_deleted_chunk(sqlite_paths: tuple[Path, Path]) -> None:
    # Given a brain (too small for an ANN index) and a deleted document whose text and vector are known
    db_path, vectors_dir = sqlite_paths
    index = SqliteChunkIndex(db_path, vectors_dir, DIM, background_maintenance=False)
    try:
        rng = np.random.default_rng(11)
        kept = rng.standard_normal((30, DIM)).astype(np.float32)
        kept[:, 15] = 0.0  # nothing kept points along the deleted vector
        index.upsert([chunk(f"c{i}", f"sedge marsh note {i}") for i in range(30)], kept)
        long_text = f"{MARKER} sedge marsh " + "reed bunting song " * 600  # spills over pages
        index.upsert(
            [chunk("x", long_text, document_id="secret", title=f"{MARKER} title")], axis(15)[None, :]
        )
        assert index.delete_document("b1", "secret") == 1
        assert MARKED in _stored_bytes(db_path)
        assert (_vector_rows(vectors_dir) @ axis(15)).max() > 0.999
        queries = [axis(15), *(kept[i] for i in range(5))]
        before = [_hits(index, q) for q in queries]
        # When the brain is scrubbed
        index.scrub("b1")
        # Then neither the database, its log nor any vector file holds anything of it
        assert MARKED not in _stored_bytes(db_path)
        rows = _vector_rows(vectors_dir)
        assert rows.shape == (30, DIM)
        cosines = rows @ axis(15) / np.maximum(np.linalg.norm(rows, axis=1), 1e-12)
        assert cosines.max() < 1 - 1e-3
        assert sorted(p.name for p in vectors_dir.glob("b1*")) == ["b1.compact.lock", "b1~1.f32"]
        # And the remaining chunks are found exactly as before
        assert [_hits(index, q) for q in queries] == before
        assert search(index, MARKER) == []
    finally:
        index.close()
    reopened = SqliteChunkIndex(db_path, vectors_dir, DIM)
    try:
        assert reopened.count("b1") == 30
        assert search(reopened, "sedge marsh note 7", kept[7], top_k=1) == ["c7"]
    finally:
        reopened.close()


def test_sqlite_scrub_rebuilds_the_ann_index_from_live_rows_only(sqlite_paths: tuple[Path, Path]) -> None:
    faiss = pytest.importorskip("faiss")
    # Given a brain big enough for an ANN index (by the lowered threshold), indexed with a chunk since deleted
    db_path, vectors_dir = sqlite_paths
    index = SqliteChunkIndex(
        db_path, vectors_dir, DIM, ann_min_rows=40, exact_max_rows=5, background_maintenance=False
    )
    try:
        rng = np.random.default_rng(5)
        kept = rng.standard_normal((60, DIM)).astype(np.float32)
        kept[:, 15] = 0.0
        kept /= np.linalg.norm(kept, axis=1, keepdims=True)
        index.upsert([chunk(f"c{i}", f"sedge marsh {i}") for i in range(60)], kept)
        index.upsert([chunk("x", "sedge marsh secret", document_id="secret")], axis(15)[None, :])
        first = index.compact("b1")
        assert first is not None and first.indexed_rows == 61
        indexed = faiss.read_index(str(vectors_dir / "b1.faiss"))
        assert (indexed.reconstruct_n(0, indexed.ntotal) @ axis(15)).max() > 0.99
        index.delete_document("b1", "secret")
        queries = [kept[i] + 0.1 * rng.standard_normal(DIM).astype(np.float32) for i in range(5)]
        before = [_hits(index, q) for q in queries]
        # When it is scrubbed
        index.scrub("b1")
        # Then its index covers the live rows only, and the old epoch's files are gone
        assert sorted(p.name for p in vectors_dir.glob("b1*")) == [
            "b1.compact.lock",
            "b1~1.f32",
            "b1~1.faiss",
            "b1~1.faiss.sum",
        ]
        rebuilt = faiss.read_index(str(vectors_dir / "b1~1.faiss"))
        assert rebuilt.ntotal == 60
        assert (rebuilt.reconstruct_n(0, rebuilt.ntotal) @ axis(15)).max() < 0.5
        assert (_vector_rows(vectors_dir) @ axis(15)).max() < 1e-3
        assert [_hits(index, q) for q in queries] == before
    finally:
        index.close()


@pytest.mark.parametrize("text", NASTY)
def test_match_expression_is_always_valid_fts5(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO t VALUES ('zebra by the river, deja vu')")
    expression = match_expression(text)
    if expression is not None:
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()
    assert match_expression("Where did the ZEBRA go? zebra!") == '"zebra" OR "go"'


def test_context_is_searchable_but_kept_apart_from_the_text(index: ChunkIndex) -> None:
    # Given a reply whose own words miss the question, with the question as its context
    reply = chunk("r", "great, my knees stopped hurting", context="how is marathon training")
    index.upsert([reply, chunk("o", "other words entirely")], np.stack([axis(1), axis(2)]))
    # When searching by the context's words / Then the reply is found, its text unchanged
    assert search(index, "marathon training") == ["r"]
    stored = index.get_chunks("b1", "doc-r")[0]
    assert stored.text == "great, my knees stopped hurting"
    assert stored.context == "how is marathon training"


def test_set_context_replaces_the_first_chunks_context(index: ChunkIndex) -> None:
    first = chunk("p0", "opening words", document_id="doc-p")
    second = chunk("p1", "closing words", document_id="doc-p", ordinal=1)
    index.upsert([first, second], np.stack([axis(1), axis(2)]))
    index.set_context("b1", "doc-p", "kingfisher sightings")
    assert search(index, "kingfisher") == ["p0"]
    assert [c.context for c in index.get_chunks("b1", "doc-p")] == ["kingfisher sightings", ""]
    index.set_context("b1", "doc-missing", "ignored")  # no chunks: nothing happens


# -- within a cluster's clause limit (OpenSearch counts a token of each ideograph, each field) -----

IDEOGRAPHS = "".join(chr(0x4E00 + 7 * i) for i in range(300))


def test_a_long_chinese_query_is_searched(index: ChunkIndex) -> None:
    """300 ideographs are one word to the embedded index and 300 tokens to OpenSearch: 1,200
    leaf queries over four fields, which a real cluster refused (500)."""
    index.upsert(
        [chunk("a", f"会议记录 {IDEOGRAPHS[:40]}"), chunk("b", "other")], np.stack([axis(0), axis(1)])
    )
    index.search(query(IDEOGRAPHS))
    hits = index.search(query(IDEOGRAPHS, axis(0)))
    assert hits and hits[0].chunk.id == "a"


def test_a_long_word_of_letters_and_katakana_is_searched(index: ChunkIndex) -> None:
    """`bアcイ…`: one word to the embedded index, a token per letter and katakana to OpenSearch."""
    word = "".join(f"{chr(0x61 + i % 26)}{chr(0x30A2 + i % 40)}" for i in range(240))
    index.upsert([chunk("a", f"notes {word[:20]}"), chunk("b", "other")], np.stack([axis(0), axis(1)]))
    index.search(query(word))
    hits = index.search(query(word, axis(0)))
    assert hits and hits[0].chunk.id == "a"
    index.search(query("", None, boolean=parse(f"{word[:200]} AND {word[200:400]}"), top_k=50))


def test_a_boolean_query_of_long_chinese_words_is_searched(index: ChunkIndex) -> None:
    text = f"{IDEOGRAPHS[:40]} 会议 {IDEOGRAPHS[40:80]}"
    index.upsert([chunk("a", text), chunk("b", "other")], np.stack([axis(0), axis(1)]))
    words = " AND ".join(IDEOGRAPHS[i : i + 40] for i in range(0, 160, 40))
    assert matching(index, f"{IDEOGRAPHS[:40]} AND {IDEOGRAPHS[40:80]}") == ["a"]
    index.search(query("", None, boolean=parse(words), top_k=50))  # 4 words of 40: refused before


def test_an_owner_filter_over_hundreds_of_brains_is_searched(index: ChunkIndex) -> None:
    """One subject searching 300 brains (a Mnemosyne search over every library it may read):
    a clause per brain passed the limit at about 200 brains."""
    owned = chunk("x", "the heron waded", brain_id="b7", facets={"user_id": "bob"})
    index.upsert([chunk("a", "the heron waded", brain_id="b7"), owned], np.stack([axis(0), axis(0)]))
    brains = tuple(f"b{i}" for i in range(300))
    found = search(index, "heron", brain_ids=brains, owners=tuple((b, "alice") for b in brains))
    assert found == ["a"]


def test_an_any_of_tags_filter_of_seventy_thousand_values_is_searched(index: ChunkIndex) -> None:
    """A ThoughtMCP keyword filter takes any number of words; one `terms` query holds 65,536."""
    index.upsert(
        [chunk("a", "the heron waded", tags=["heron"]), chunk("b", "the heron slept", tags=["owl"])],
        np.stack([axis(0), axis(1)]),
    )
    words = [f"k{i}" for i in range(70_000)] + ["heron"]
    assert search(index, "heron", any_tags=(tuple(words),)) == ["a"]
