"""Session recall: hybrid search for a query, weighted by the session's recent messages.

The weighting (docs/SESSIONS.md has the measurements behind every number):

1. Rank list 0 is the plain hybrid search for the query, weight 1.
2. Each of the newest `window` user/assistant messages m_i (i = 0 newest) may add one rank list:
   the hybrid search for `query + m_i` (the message's first `context_chars` characters), weighted
   `context_weight * decay**i * gate(cos(query, m_i))`. The gate is 0 below `gate_floor` cosine
   similarity between the query's and the message's embeddings, rises linearly to 1 at
   `gate_full`: a message about something else adds nothing (and costs no search). The query's
   words stay in every list, so context re-orders what the query finds and brings up what the
   query and the conversation share; it never searches for the conversation alone.
3. Lists are fused by weighted reciprocal rank fusion over documents:
   score(d) = sum_j w_j / (rrf_k + rank_j(d)); a document keeps the chunk of its best list.
4. Documents whose metadata.session_id names this session (written during it, e.g. by
   extraction) get `session_boost / (rrf_k + 1)` more, as if ranked first in one more list.
5. Echoes, hits whose text contains a context message verbatim or is contained in one, move
   below every other hit: the caller already has those words in its context window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from cairn.domain.models import Brain, Message, MessageRole, Session
from cairn.ports.embedder import Embedder
from cairn.services.search.service import SearchHit, SearchService

ECHO_MIN_CHARS = 32


@dataclass(frozen=True)
class RecallTuning:
    window: int = 6
    """How many of the newest messages are read as context (0: plain search)."""
    context_weight: float = 0.5
    """RRF weight of the newest message's list; the query's own list weighs 1."""
    decay: float = 0.7
    """Each older message's list weighs `decay` times the next newer one's."""
    gate_floor: float = 0.3
    gate_full: float = 0.6
    """Query-message cosine similarity below which a message counts for nothing / above which fully
    (calibrated on MiniLM-L6 embeddings; other embedders have other similarity ranges)."""
    context_chars: int = 400
    pool: int = 30
    """Documents taken from each list before fusion."""
    rrf_k: int = 60
    session_boost: float = 1.0
    demote_echoes: bool = True
    roles: tuple[str, ...] = (MessageRole.user.value, MessageRole.assistant.value)


@dataclass
class _Fused:
    hit: SearchHit
    best: float = 0.0
    score: float = 0.0
    query_rank: int | None = None
    context_rank: int | None = None


class SessionRecall:
    def __init__(self, search: SearchService, embedder: Embedder, tuning: RecallTuning | None = None) -> None:
        self.search = search
        self.embedder = embedder
        self.tuning = tuning or RecallTuning()

    def recall(
        self,
        brain: Brain,
        session: Session,
        query: str,
        context: Sequence[Message],
        *,
        top_k: int = 10,
        scope: str | None = None,
    ) -> list[SearchHit]:
        """`context` is the session's recent messages, newest first."""
        t = self.tuning
        texts = [m.content[: t.context_chars] for m in context if m.role.value in t.roles][: t.window]
        texts = [x for x in texts if x.strip()]
        pool = max(t.pool, top_k)
        lists = [(1.0, self._hits(brain, query, pool, scope))]
        for i, (text, gate) in enumerate(zip(texts, self._gates(query, texts), strict=True)):
            weight = t.context_weight * t.decay**i * gate
            if weight > 0:
                # a message's quotes and capital NOTs are its words, not the query language
                lists.append((weight, self._hits(brain, f"{query}\n{text}", pool, scope, language=False)))
        ranked = sorted(self._fuse(lists, session.id), key=lambda f: f.score, reverse=True)
        echoes = _Echoes(texts if t.demote_echoes else [])
        flagged = [(echoes.match(f.hit.content), f) for f in ranked]
        flagged.sort(key=lambda pair: pair[0])  # stable: echoes last, score order kept within each group
        chunks = [_chunk(f, echo=echo) for echo, f in flagged[:top_k]]
        self.search.note_access(brain.id, [c.document_id for c in chunks])
        return chunks

    def _gates(self, query: str, texts: list[str]) -> list[float]:
        if not texts or self.tuning.context_weight <= 0:
            return [0.0] * len(texts)
        vectors = self.embedder.embed([query, *texts])
        floor, full = self.tuning.gate_floor, self.tuning.gate_full
        span = max(full - floor, 1e-9)
        return [min(1.0, max(0.0, (float(vectors[0] @ v) - floor) / span)) for v in vectors[1:]]

    def _hits(
        self, brain: Brain, text: str, pool: int, scope: str | None, *, language: bool = True
    ) -> list[SearchHit]:
        return self.search.search(
            brain, text, top_k=pool, scope=scope, count_access=False, language=language
        ).hits

    def _fuse(self, lists: list[tuple[float, list[SearchHit]]], session_id: str) -> list[_Fused]:
        k = self.tuning.rrf_k
        by_doc: dict[str, _Fused] = {}
        for index, (weight, hits) in enumerate(lists):
            for rank, hit in enumerate(hits, start=1):
                part = weight / (k + rank)
                entry = by_doc.setdefault(hit.document_id, _Fused(hit))
                entry.score += part
                if part > entry.best:
                    entry.best, entry.hit = part, hit
                if index == 0:
                    entry.query_rank = rank
                elif entry.context_rank is None or rank < entry.context_rank:
                    entry.context_rank = rank
        for entry in by_doc.values():
            if entry.hit.metadata.get("session_id") == session_id:
                entry.score += self.tuning.session_boost / (k + 1)
        return list(by_doc.values())


class _Echoes:
    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = [n for n in (_norm(x) for x in texts) if len(n) >= ECHO_MIN_CHARS]

    def match(self, content: str) -> bool:
        text = _norm(content)
        if len(text) < ECHO_MIN_CHARS:
            return False
        return any(c in text or text in c for c in self.texts)


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _chunk(f: _Fused, *, echo: bool) -> SearchHit:
    """The hit of the chunk that matched, with the fused session score and its parts."""
    return replace(
        f.hit,
        score=round(f.score, 6),
        component_scores={"query_rank": f.query_rank, "context_rank": f.context_rank, "echo": echo},
    )
