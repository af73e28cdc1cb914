"""Searching gbrain pages (services/gbrain/pages.py): keyword search, hybrid query, progressive expansion.

- `keyword`: the index's BM25 leg alone (no vector), over pages only (page_paths.py); a page's
  score is the BM25 score of its best chunk as the index reports it (higher is better, not
  normalised: SQLite FTS5's `-bm25()`, OpenSearch's `_score`).
- `query`: a single whitespace-free token (or `[[token]]`) naming a page of the collection is
  that page alone, scored 1.0. Otherwise the BM25 leg and the vector leg (its 10 best pages) are
  merged as a set union, 0.4 · bm25 / best bm25 + 0.6 · similarity / best similarity (a leg that
  did not find a page adds 0), ties broken by slug; each blend over the best blend, times the
  calibrated relevance of the best similarity (services/search/relevance.py). gbrain's own blend
  scores its top page about 1.0 whether it answers or not; so scaled, the top page scores how well
  the best page answers, comparably across queries, and the order is gbrain's. (The blend alone
  times the relevance let a question whose legs disagree score lower than one whose legs agree on
  an equally good page: AUC of answerable vs unanswerable questions 0.843 / 0.749 on the two
  relevance fixtures, 0.872 / 0.780 over the best blend.) Fewer than 2 results, or none scoring 0.3,
  logs the query as a knowledge gap (services/gbrain/gaps.py: only its hash is kept).
- expansion (`depth: auto`): from the results, along active outbound links, up to 3 hops, while
  the pages' cost (len(compiled truth) / 4 tokens) stays within a budget of 4000 tokens; expanded
  pages are appended with score 0.0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from cairn.auth import access
from cairn.domain.js_text import js_blank, js_trim
from cairn.domain.models import Brain
from cairn.domain.pages import GENERAL_WING, MAX_LIMIT, is_slug, page_wing
from cairn.domain.text import query_read
from cairn.ports.chunks import ChunkFilter, ChunkHit, ChunkQuery
from cairn.services.gbrain.gaps import GapService
from cairn.services.gbrain.page_paths import slug_of_path
from cairn.services.gbrain.pages import Page, PageService
from cairn.services.links.graph import GraphService
from cairn.services.search.service import SearchService

BM25_SHARE: Final = 0.4
VECTOR_SHARE: Final = 0.6
VECTOR_PAGES: Final = 10
GAP_MIN_RESULTS: Final = 2
GAP_MIN_SCORE: Final = 0.3
EXPANSION_HOPS: Final = 3
TOKEN_BUDGET: Final = 4000
_POOL: Final = 200


@dataclass(frozen=True)
class PageHit:
    page: Page
    score: float


class PageSearch:
    def __init__(
        self,
        pages: PageService,
        search: SearchService,
        graph: GraphService,
        gaps: GapService,
        *,
        token_budget: int = TOKEN_BUDGET,
    ) -> None:
        self.pages = pages
        self.search = search
        self.graph = graph
        self.gaps = gaps
        self.token_budget = token_budget

    def keyword(self, brain: Brain, query: str, *, wing: str | None = None, limit: int = 10) -> list[PageHit]:
        limit = min(max(limit, 0), MAX_LIMIT)
        if js_blank(query) or limit == 0:
            return []
        query = query_read(query)
        best = self._leg(brain, query, wing, vector=False, pool=max(_POOL, limit * 4))
        pages = self.pages.pages_by_id(brain, best, self.pages.name_of(brain))
        hits = [PageHit(pages[i], best[i]) for i in best if i in pages]
        return sorted(hits, key=lambda h: (-h.score, h.page.slug))[:limit]

    def query(
        self, brain: Brain, query: str, *, wing: str | None = None, limit: int = 10, expand: bool = False
    ) -> list[PageHit]:
        limit = min(max(limit, 0), MAX_LIMIT)
        if js_blank(query):
            return []
        name = self.pages.name_of(brain)
        read = query_read(query)  # the gap below is logged under the hash of the query as asked
        exact = self._exact(brain, read, wing, name)
        hits = [PageHit(exact, 1.0)] if exact is not None else self._ranked(brain, read, wing, limit, name)
        # an exact page is expanded as any hit is (gbrain's progressive retrieval takes whatever the
        # search found), and is no gap: the page asked for is there (as gbrain's later releases pin)
        unanswered = len(hits) < GAP_MIN_RESULTS or all(h.score < GAP_MIN_SCORE for h in hits)
        if exact is None and unanswered and access.own_tenant(brain):
            best = max((h.score for h in hits), default=None)
            self.gaps.log(brain, query, confidence=best, noticed=True)
        return self.expand(brain, hits, name=name) if expand else hits

    def _ranked(self, brain: Brain, query: str, wing: str | None, limit: int, name: str) -> list[PageHit]:
        """The blend of both legs (module docstring), best first."""
        bm25 = self._leg(brain, query, wing, vector=False, pool=max(_POOL, limit * 4))
        similar = dict(list(self._leg(brain, query, wing, vector=True, pool=_POOL).items())[:VECTOR_PAGES])
        top_bm25 = max(bm25.values(), default=0.0)
        top_similar = max(similar.values(), default=0.0)
        scores: dict[str, float] = {}
        for doc_id in {*bm25, *similar}:
            lexical = bm25.get(doc_id, 0.0) / top_bm25 if top_bm25 > 0 else 0.0
            semantic = similar.get(doc_id, 0.0) / top_similar if top_similar > 0 else 0.0
            scores[doc_id] = BM25_SHARE * lexical + VECTOR_SHARE * semantic
        confidence = self.search.tuning.calibration(top_similar)  # how well the best page answers, comparably
        top_blend = max(scores.values(), default=0.0)
        scale = confidence / top_blend if top_blend > 0 else 0.0
        scores = {doc_id: score * scale for doc_id, score in scores.items()}
        pages = self.pages.pages_by_id(brain, scores, name)
        hits = [PageHit(pages[i], scores[i]) for i in scores if i in pages]
        return sorted(hits, key=lambda h: (-h.score, h.page.slug))[:limit]

    def expand(
        self, brain: Brain, hits: Sequence[PageHit], hops: int = EXPANSION_HOPS, *, name: str | None = None
    ) -> list[PageHit]:
        """`hits` (while their cost fits the budget; the first always), then the pages their
        active outbound links reach, hop by hop, each that still fits."""
        if not hits:
            return []
        seen: set[str] = set()
        out: list[PageHit] = []
        used = 0
        for hit in hits:
            cost = _cost(hit.page)
            if out and used + cost > self.token_budget:
                break
            seen.add(hit.page.document.id)
            used += cost
            out.append(hit)
        frontier = [h.page.document.id for h in out]
        name = self.pages.name_of(brain) if name is None else name
        for _ in range(min(hops, EXPANSION_HOPS)):
            if not frontier or used >= self.token_budget:
                break
            reached: list[str] = []
            for doc_id in frontier:
                for node in self.graph.graph(brain, doc_id, depth=1).nodes[1:]:
                    if node not in seen:
                        seen.add(node)
                        reached.append(node)
            pages = self.pages.pages_by_id(brain, reached, name)
            frontier = []
            for doc_id in reached:
                if doc_id not in pages:
                    continue
                page = pages[doc_id]
                cost = _cost(page)
                if used + cost > self.token_budget:
                    continue
                used += cost
                frontier.append(doc_id)
                out.append(PageHit(page, 0.0))
        return out

    # -- internals ---------------------------------------------------------------------------

    def _exact(self, brain: Brain, query: str, wing: str | None, name: str) -> Page | None:
        token = js_trim(query)
        if token.startswith("[[") and token.endswith("]]"):
            token = js_trim(token[2:-2])
        if any(ch.isspace() for ch in token):
            return None
        if not is_slug(token) or (wing and page_wing(token) != wing):
            return None
        return self.pages.find(brain, token, name)

    def _leg(
        self, brain: Brain, query: str, wing: str | None, *, vector: bool, pool: int
    ) -> dict[str, float]:
        """Document id -> the best score of its chunks in one leg, best first, pages only."""
        prefixes = (f"{wing}/",) if wing and wing != GENERAL_WING else ()
        chunk_query = ChunkQuery(
            text=query,
            vector=self.search.embedder.embed([query])[0].tolist() if vector else None,
            filter=ChunkFilter(brain_ids=(brain.id,), path_prefixes=prefixes),
            top_k=pool,
            candidate_pool=pool,
            bm25_weight=0.0 if vector else 1.0,
            vector_weight=1.0 if vector else 0.0,
        )
        best: dict[str, float] = {}
        for hit in self.search.chunks.search(chunk_query):
            slug = slug_of_path(hit.chunk.path)
            if slug is None or (wing is not None and page_wing(slug) != wing):
                continue
            score = _score(hit, vector)
            if score is not None and score > best.get(hit.chunk.document_id, float("-inf")):
                best[hit.chunk.document_id] = score
        return dict(sorted(best.items(), key=lambda kv: -kv[1]))


def _score(hit: ChunkHit, vector: bool) -> float | None:
    return hit.vector_similarity if vector else hit.bm25_score


def _cost(page: Page) -> int:
    return len(page.text.compiled_truth) // 4
