"""brain_query's scores: gbrain's blend over the best blend, times the calibrated relevance of the
best similarity, so the top page scores how well the best page answers even when the keyword and
vector legs disagree on which page is best (gbrain's own blend then tops out under 1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cairn.services.gbrain.page_search import BM25_SHARE, VECTOR_SHARE, PageSearch
from tests.fakes.container import fake_container
from tests.integration.gbrain.conftest import page

QUERY = "anvil forge hammer"
PAGES = {
    # two of the query's words, both common in the brain: nearest by the (bag of words) vector
    "tools/kit": page("Kit", "forge hammer tongs"),
    # the query's one rare word, three times: best by BM25, further by the vector
    "tools/anvils": page("Anvils", "anvil anvil anvil"),
    **{f"shops/shop-{i}": page(f"Shop {i}", f"forge hammer bench stool lamp{i}") for i in range(6)},
}


def test_the_top_page_scores_the_relevance_of_the_best_similarity(tmp_path: Path) -> None:
    c = fake_container(tmp_path)
    c.brains.create("Work", slug="work")
    for slug, content in PAGES.items():
        c.pages.put(slug, content)
    search = PageSearch(c.pages, c.search, c.graph, c.gaps)
    brain = c.pages.write_target()
    bm25 = search._leg(brain, QUERY, None, vector=False, pool=50)
    similar = search._leg(brain, QUERY, None, vector=True, pool=50)
    assert next(iter(bm25)) != next(iter(similar))  # the legs disagree: gbrain's top blend is under 1
    top_blend = max(
        BM25_SHARE * bm25.get(d, 0.0) / max(bm25.values())
        + VECTOR_SHARE * similar.get(d, 0.0) / max(similar.values())
        for d in {*bm25, *similar}
    )
    assert top_blend < 1.0

    hits = search.query(brain, QUERY, limit=10)
    relevance = c.search.tuning.calibration(max(similar.values()))
    assert hits[0].score == pytest.approx(relevance, abs=1e-9)
    scores = np.array([h.score for h in hits])
    assert list(scores) == sorted(scores, reverse=True)
    assert all(0 <= s <= relevance for s in scores)
