"""How the hybrid search reads a query: a plain question, or one in the Jeffs Brain query language.

A query with a quote, an operator (`AND`, `OR`, `NOT` in capitals) or a prefix (`kube*`) is read
by domain/jeffs_query.py: the keyword leg keeps only the chunks its expression matches (a phrase's
words side by side, AND both, a prefix any word it starts), and the vector leg embeds its words
without the quotes, the operators and the excluded operands. Any other query is read as it always
was: its words OR-ed, with the spellings of the identifiers it names (identifiers.keyword_text),
and embedded as typed.

NOT is a promise about the whole answer, not only the keyword leg: a document holding a NOT
operand in any of its chunks is left out even when the vector leg finds it by meaning (`deploy NOT
kubernetes` never answers with the Kubernetes note). Whether a chunk holds it is the index's own
judgement (its keyword leg asked about the candidates' documents), so stemming and the fields
searched are those of the keyword leg on every adapter. A query that reduces to nothing (only
stopwords, punctuation or excluded words) has no keyword leg; its NOT still holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Final

from cairn.domain import jeffs_query
from cairn.domain.boolean_query import BoolQuery, matches
from cairn.domain.text import tag_words
from cairn.ports.chunks import ChunkFilter, ChunkHit, ChunkIndex, ChunkQuery
from cairn.services.search.identifiers import keyword_text

EXCLUSION_POOL: Final = 1_000
"""Chunks of the candidates' documents one exclusion check reads. When it comes back full, the
documents it found are left out and the rest asked again, so one long document holding the
excluded word in a thousand chunks cannot hide another candidate that holds it once."""


@dataclass(frozen=True)
class Reading:
    text: str  # what the vector leg embeds and the blend, re-ranker and highlights read
    keyword: str  # the plain keyword leg's text (empty when `boolean` is set or nothing is left)
    boolean: BoolQuery | None = None  # the keyword leg's expression
    excluded: BoolQuery | None = None  # what no hit's document may hold


@lru_cache(maxsize=256)
def read(query: str) -> Reading:
    """How a search reads `query` (the module's docstring)."""
    if not jeffs_query.uses_language(query):
        return plain(query)
    found = jeffs_query.expression(query)
    return Reading(found.spoken or query, "", found.match, found.excluded)


def plain(query: str) -> Reading:
    """`query` read as a plain question whatever it holds (an internal lookup's text, not a user's)."""
    return Reading(query, keyword_text(query))


def without_excluded(
    chunks: ChunkIndex, excluded: BoolQuery | None, flt: ChunkFilter, hits: Sequence[ChunkHit]
) -> list[ChunkHit]:
    """The hits whose document holds nothing `excluded` matches, in order."""
    if excluded is None or not hits:
        return list(hits)
    gone = {h.chunk.document_id for h in hits if _holds(excluded, h)}
    left = [d for d in dict.fromkeys(h.chunk.document_id for h in hits) if d not in gone]
    while left:
        check = ChunkQuery(
            text="",
            vector=None,
            filter=replace(flt, document_ids=tuple(left)),
            top_k=EXCLUSION_POOL,
            candidate_pool=EXCLUSION_POOL,
            boolean=excluded,
        )
        found = chunks.search(check)
        gone |= {h.chunk.document_id for h in found}
        if len(found) < EXCLUSION_POOL:  # every chunk that holds it was read
            break
        left = [d for d in left if d not in gone]
    return [h for h in hits if h.chunk.document_id not in gone]


def _holds(query: BoolQuery, hit: ChunkHit) -> bool:
    c = hit.chunk
    return matches(query, c.title, tag_words(c.tags), c.text, c.context)
