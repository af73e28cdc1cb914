from __future__ import annotations

from collections.abc import Sequence

import pytest

from cairn.bootstrap import Container
from cairn.domain.errors import InvalidInput
from cairn.domain.models import Brain
from cairn.ports.reranker import Ranked as RerankedDoc
from cairn.ports.reranker import RerankError


def _seed(container: Container, brain: Brain) -> None:
    docs = container.documents
    docs.write(brain, "memory/global/coffee.md", b"I drink coffee every morning before work.")
    docs.write(brain, "memory/project/cairn/coffee.md", b"The cairn project chose coffee-fuelled sprints.")
    docs.write(brain, "memory/agent/bot/coffee.md", b"The bot remembers coffee orders.")
    docs.write(brain, "other/coffee.md", b"Coffee beans are roasted seeds.")


@pytest.mark.parametrize(
    ("scope", "prefix"),
    [("global", "memory/global/"), ("project", "memory/project/"), ("agent", "memory/agent/")],
)
def test_scope_selects_the_memory_namespace(
    container: Container, brain: Brain, scope: str, prefix: str
) -> None:
    _seed(container, brain)
    hits = container.search.search(brain, "coffee", scope=scope).hits
    assert hits and all(h.path.startswith(prefix) for h in hits)


def test_scope_all_searches_everything(container: Container, brain: Brain) -> None:
    _seed(container, brain)
    assert len(container.search.search(brain, "coffee", scope="all").hits) == 4


def test_recency_sort_puts_newest_first(container: Container, brain: Brain) -> None:
    _seed(container, brain)
    hits = container.search.search(brain, "coffee", sort="recency").hits
    stamps = [h.created_at for h in hits]
    assert stamps == sorted(stamps, reverse=True)
    assert hits[0].path == "other/coffee.md"


def test_recency_is_when_a_document_was_last_written(container: Container, brain: Brain) -> None:
    _seed(container, brain)
    first = container.search.search(brain, "coffee", sort="recency").hits
    oldest = first[-1].path
    content = container.documents.read(brain, oldest)
    container.documents.write(brain, oldest, content + b"\n\nMore coffee notes.")
    hits = container.search.search(brain, "coffee", sort="recency").hits
    assert hits[0].path == oldest  # written last, though created first
    stamps = [h.updated_at for h in hits]
    assert stamps == sorted(stamps, reverse=True)


def test_relevance_then_recency_keeps_best_match_first(container: Container, brain: Brain) -> None:
    _seed(container, brain)
    container.documents.write(brain, "x/espresso.md", b"espresso espresso espresso")
    hits = container.search.search(brain, "espresso", sort="relevance_then_recency").hits
    assert hits[0].path == "x/espresso.md"


def test_top_k_and_one_hit_per_document(container: Container, brain: Brain) -> None:
    long_text = ("# Birds\n\n" + "Swallows migrate south in autumn. " * 80).encode()
    container.documents.write(brain, "birds.md", long_text)
    _seed(container, brain)
    hits = container.search.search(brain, "swallows migrate", top_k=2).hits
    assert len(hits) <= 2
    assert len({h.document_id for h in hits}) == len(hits)


def test_bad_queries_are_rejected(container: Container, brain: Brain) -> None:
    with pytest.raises(InvalidInput):
        container.search.search(brain, "   ")
    with pytest.raises(InvalidInput):
        container.search.search(brain, "x", sort="alphabetical")


def test_brains_are_isolated(container: Container, brain: Brain) -> None:
    other = container.brains.create("Other", slug="other")
    container.documents.write(other, "secret.md", b"platypus")
    assert container.search.search(brain, "platypus").hits == []
    assert [h.path for h in container.search.search(other, "platypus").hits] == ["secret.md"]


def test_a_document_filling_the_first_hits_does_not_crowd_out_the_others(
    container: Container, brain: Brain, monkeypatch: pytest.MonkeyPatch
) -> None:
    paragraph = "Coffee coffee espresso coffee beans, coffee grinder and coffee cups. " * 12
    container.documents.write(brain, "notes/coffee-book.md", "\n\n".join([paragraph] * 40).encode())
    for i in range(6):
        container.documents.write(brain, f"notes/other-{i}.md", f"Note {i}: tea, and once a coffee.".encode())
    asked: list[tuple[int, int, int]] = []
    real = container.search.chunks.search

    def spy(query):  # type: ignore[no-untyped-def]
        asked.append((query.top_k, query.documents, query.candidate_pool))
        hits = real(query)
        asked.append((len(hits), len({h.chunk.document_id for h in hits}), 0))
        return hits

    monkeypatch.setattr(container.search.chunks, "search", spy)
    hits = container.search.search(brain, "coffee", top_k=5).hits
    paths = [h.path for h in hits]
    assert len(paths) == 5 and len(set(paths)) == 5 and "notes/coffee-book.md" in paths
    # One search: the first 25 chunks held fewer than 5 documents, so the index widened its head
    # to the whole pool (ChunkQuery.documents) without the service asking again.
    assert asked[0] == (25, 5, 100) and len(asked) == 2 and asked[1][0] > 25 and asked[1][1] == 7
    asked.clear()
    assert [h.path for h in container.search.search(brain, "tea", top_k=5).hits][:1] != []
    assert asked[0] == (25, 5, 100) and asked[1][0] <= 25 + 5  # enough documents: not widened


class _Reversing:
    """A re-ranker that puts the search's own order upside down (or fails, or keeps one)."""

    model_id = "reversing"

    def __init__(self, *, fail: bool = False, keep: int | None = None) -> None:
        self.fail, self.keep, self.calls = fail, keep, 0

    def rerank(
        self, query: str, documents: Sequence[str], instruction: str | None = None, top_n: int | None = None
    ) -> list[RerankedDoc]:
        self.calls += 1
        if self.fail:
            raise RerankError("rerank_timeout", "no reply in time")
        ranked = [RerankedDoc(i, float(i)) for i in reversed(range(len(documents)))]  # last first
        return ranked[: self.keep] if self.keep is not None else ranked


def test_a_configured_reranker_orders_relevance_searches_and_scores_stay_calibrated(
    container: Container, brain: Brain
) -> None:
    _seed(container, brain)
    plain = container.search.search(brain, "coffee", scope="all").hits
    container.search.reranker = reranker = _Reversing()
    hits = container.search.search(brain, "coffee", scope="all").hits
    assert [h.path for h in hits] == [h.path for h in reversed(plain)]  # the re-ranker's order
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    best = max(float(h.component_scores["relevance"] or 0) for h in hits)
    assert hits[0].score == pytest.approx(best, abs=1e-6)  # the top still says how well the best answers
    assert [h.component_scores["rerank"] for h in hits] == [3.0, 2.0, 1.0, 0.0]

    container.search.search(brain, "coffee", scope="all", sort="recency")
    assert reranker.calls == 1  # only a relevance search is re-ranked

    container.search.reranker = _Reversing(keep=1)
    kept = container.search.search(brain, "coffee", scope="all").hits
    assert kept[0].path == plain[-1].path and [h.path for h in kept[1:]] == [h.path for h in plain[:-1]]
    assert "rerank" not in kept[1].component_scores and kept[1].score == 0.0  # left out: below

    container.search.reranker = _Reversing(fail=True)
    fallback = container.search.search(brain, "coffee", scope="all").hits
    assert [h.path for h in fallback] == [h.path for h in plain]  # the blend's order stands
    assert "rerank" not in fallback[0].component_scores
