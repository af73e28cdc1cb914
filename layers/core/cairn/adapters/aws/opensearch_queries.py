"""Request bodies of the OpenSearch ChunkIndex: the filter, the two legs, the hybrid query, the
by-query writes (a document, a list of chunk ids, a staged version) and the bulk bodies.

Both legs carry the whole filter: the BM25 leg in its bool `filter`, the k-NN leg inside the
`knn` clause (faiss efficient filtering, so the k nearest are taken among matching chunks only,
not cut first and filtered after); the hybrid query is made of the same two legs. Dates are
compared as epoch milliseconds, so time zones never matter. Query text never reaches a query
parser: it is reduced to the embedded index's terms (folded words, stopwords dropped,
`fts_query.query_terms`) and sent to a `multi_match`, which analyses it as plain text, so user
input can never be query syntax. A boolean query (domain/boolean_query.py) is a bool query in
the BM25 leg's filter, over the same fields: a `multi_match` per term, one of type `phrase` per
phrase (adjacent within one field), AND as `must` with NOT as `must_not`, OR as `should` with
minimum_should_match 1, a prefix (the query language's `kube*`) as a `prefix` query on each
field, which OpenSearch does not analyse (the stem is already folded; the index holds stemmed
tokens, as FTS5's prefix query meets them); the leg's scoring `multi_match` then holds its
positive terms, so it is ranked as the embedded index ranks it, and a query with prefixes also
scores each prefix's match (constant, as OpenSearch scores a prefix query).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from cairn.adapters.aws.opensearch_schema import TAG_WORDS, VECTOR_FIELD, Body, to_source
from cairn.adapters.local.chunk_schema import epoch_ms
from cairn.adapters.local.vector_store import Floats
from cairn.domain.boolean_query import And, BoolQuery, Not, Or, Phrase, Prefix, Term, check, positive_prefixes
from cairn.domain.models import OWNER_FACET, Chunk
from cairn.ports.chunks import ChunkFilter

# Field boosts of the BM25 leg (title, text, context): the embedded index's bm25() column
# weights (sqlite_chunks.DEFAULT_BM25_WEIGHTS), summed over fields as FTS5 sums its columns. The
# words of a chunk's tags (TAG_WORDS) weigh as its title, as they share the title's column there.
DEFAULT_FIELD_WEIGHTS = (2.0, 1.0, 0.5)
TEXT_FIELDS = ["title", TAG_WORDS, "text", "context"]
SOURCE = {"excludes": [VECTOR_FIELD, TAG_WORDS]}

# A query is refused (500 `too_many_nested_clauses`) past indices.query.bool.max_clause_count
# (1,024 on 2.x) leaf queries, filters included. The scoring match makes one per token and field:
# at most 64 tokens over its four fields is 256, leaving room for the filter and a boolean query.
MAX_SCORED_TOKENS = 64
# Han ideographs and hiragana: the standard tokenizer (UAX #29) makes a token of each one, where
# the embedded index's unicode61 keeps a run of them as one word; a katakana run is a token of its
# own, apart from letters and digits beside it (`abcカタカナ` is two).
_ONE_EACH = "[\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]"
_KATAKANA = "[\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]+"
_TOKEN = re.compile(f"{_ONE_EACH}|{_KATAKANA}|(?:(?!{_ONE_EACH}|{_KATAKANA}).)+")


def analyzed(word: str) -> list[str]:
    """The tokens the standard tokenizer makes of one of Cairn's words (domain/words.py)."""
    if word.isascii():
        return [word]
    return _TOKEN.findall(word)


def scored_text(terms: Sequence[str]) -> str:
    """The scoring match's text: `terms`, cut at MAX_SCORED_TOKENS tokens as OpenSearch reads them."""
    tokens: list[str] = []
    for term in terms:
        tokens += analyzed(term)
        if len(tokens) >= MAX_SCORED_TOKENS:
            return " ".join(tokens[:MAX_SCORED_TOKENS])
    return " ".join(tokens)


def filter_clauses(chunk_filter: ChunkFilter) -> list[Body]:
    """Filter-context clauses (no scoring) for every condition of the filter."""
    f = chunk_filter
    clauses: list[Body] = [_terms("brain_id", f.brain_ids)]
    if f.active_only:
        clauses.append({"term": {"active": True}})
    if f.path_prefixes and "" not in f.path_prefixes:
        prefixes = [{"prefix": {"path": prefix}} for prefix in dict.fromkeys(f.path_prefixes)]
        clauses.append({"bool": {"should": prefixes, "minimum_should_match": 1}})
    clauses.extend({"term": {"tags": tag}} for tag in dict.fromkeys(f.tags))
    clauses.extend(_terms("tags", group) for group in f.any_tags)  # any of
    created: dict[str, Any] = {}
    if f.created_from is not None:
        created["gte"] = epoch_ms(f.created_from)
    if f.created_to is not None:
        created["lt"] = epoch_ms(f.created_to)
    if created:
        clauses.append({"range": {"created_at": {**created, "format": "epoch_millis"}}})
    if f.document_ids:
        clauses.append(_terms("document_id", f.document_ids))
    if f.current_only:  # "not superseded": a chunk indexed before the field existed is current
        clauses.append({"bool": {"must_not": [{"term": {"current": False}}]}})
    clauses.extend(_facet_clause(name, values) for name, values in f.facets)
    if f.importance_min is not None:  # a chunk without importance has no value, so never matches
        clauses.append({"range": {"importance": {"gte": float(f.importance_min)}}})
    if f.valid_at is not None:
        moment = epoch_ms(f.valid_at)
        clauses += [_absent_or("valid_from", {"lte": moment}), _absent_or("valid_to", {"gt": moment})]
    by_subject: dict[str | None, list[str]] = {}
    for brain_id, subject in f.owners:
        by_subject.setdefault(subject, []).append(brain_id)
    clauses.extend(_owners_clause(brain_ids, subject) for subject, brain_ids in by_subject.items())
    return clauses


# index.max_terms_count: the values one `terms` query may hold (65,536 by default); a longer list
# (a ThoughtMCP keyword filter of 70,000 words, which the embedded index takes) is several.
TERMS_PER_CLAUSE = 65_536


def _terms(field_name: str, values: Sequence[str]) -> Body:
    """`field_name` is one of `values`."""
    unique = list(dict.fromkeys(values))
    if not unique:
        return {"terms": {field_name: []}}  # matches nothing
    parts = [
        {"terms": {field_name: unique[i : i + TERMS_PER_CLAUSE]}}
        for i in range(0, len(unique), TERMS_PER_CLAUSE)
    ]
    if len(parts) == 1:
        return parts[0]
    return {"bool": {"should": parts, "minimum_should_match": 1}}


def _owners_clause(brain_ids: Sequence[str], subject: str | None) -> Body:
    """ChunkFilter.owners for the brains one subject searches (one clause, however many brains:
    a clause a brain passed max_clause_count at about 200 brains): no chunk of them whose owner
    the subject does not act for."""
    owner = f"facets.{OWNER_FACET}"
    hidden: Body = {"filter": [_terms("brain_id", brain_ids), {"exists": {"field": owner}}]}
    if subject is not None:
        hidden["must_not"] = [{"term": {owner: subject}}, {"prefix": {owner: f"{subject}:"}}]
    return {"bool": {"must_not": [{"bool": hidden}]}}


def _facet_clause(name: str, values: Sequence[str]) -> Body:
    """The facet `name` (a key of the `facets` flat_object) is one of `values`.

    One `term` per value: a dot path `term` is what flat_object supports since it came (2.7).
    No values match nothing (a bool without clauses would match everything).
    """
    options = [{"term": {f"facets.{name}": value}} for value in dict.fromkeys(values)]
    if not options:
        return {"match_none": {}}
    return {"bool": {"should": options, "minimum_should_match": 1}}


def _absent_or(date_field: str, bound: Body) -> Body:
    """The date field is absent (an open end) or within `bound` (epoch milliseconds)."""
    within = {"range": {date_field: {**bound, "format": "epoch_millis"}}}
    absent = {"bool": {"must_not": [{"exists": {"field": date_field}}]}}
    return {"bool": {"should": [within, absent], "minimum_should_match": 1}}


def bm25_query(
    terms: Sequence[str],
    chunk_filter: ChunkFilter,
    field_weights: tuple[float, float, float] = DEFAULT_FIELD_WEIGHTS,
    boolean: BoolQuery | None = None,
) -> Body:
    """The BM25 leg: `terms` scored over the fields; with `boolean`, only the chunks it matches
    (`terms` then being its positive terms)."""
    title, text, context = field_weights
    match: Body = {
        "multi_match": {
            "query": scored_text(terms),
            "fields": [f"title^{title}", f"{TAG_WORDS}^{title}", f"text^{text}", f"context^{context}"],
            "type": "most_fields",
            "operator": "or",
        }
    }
    clauses = filter_clauses(chunk_filter)
    if boolean is not None:
        check(boolean)
        clauses.append(boolean_clause(boolean))
        if stems := positive_prefixes(boolean):  # a word a prefix finds need not be a term scored
            match = {"bool": {"should": [match, *map(_prefix_clause, stems)], "minimum_should_match": 1}}
    return {"bool": {"must": [match], "filter": clauses}}


def _prefix_clause(stem: str) -> Body:
    return {"bool": {"should": [{"prefix": {name: stem}} for name in TEXT_FIELDS], "minimum_should_match": 1}}


def boolean_clause(node: BoolQuery) -> Body:
    """A (checked) boolean query tree as an OpenSearch query, for a filter context."""
    if isinstance(node, Term):  # a run of ideographs is one word here: its tokens in order, one leaf
        kind = {"type": "phrase"} if len(analyzed(node.word)) > 1 else {"operator": "and"}
        return {"multi_match": {"query": node.word, "fields": TEXT_FIELDS, **kind}}
    if isinstance(node, Phrase):
        return {"multi_match": {"query": " ".join(node.words), "fields": TEXT_FIELDS, "type": "phrase"}}
    if isinstance(node, Prefix):
        return _prefix_clause(node.stem)
    if isinstance(node, Or):
        return {"bool": {"should": [boolean_clause(item) for item in node.items], "minimum_should_match": 1}}
    if isinstance(node, And):
        must = [boolean_clause(item) for item in node.items if not isinstance(item, Not)]
        must_not = [boolean_clause(item.item) for item in node.items if isinstance(item, Not)]
        return {"bool": {"must": must, **({"must_not": must_not} if must_not else {})}}
    raise AssertionError("check() leaves NOT only inside an AND")


def knn_query(vector: Sequence[float], chunk_filter: ChunkFilter, k: int) -> Body:
    clause = {"vector": list(vector), "k": k, "filter": {"bool": {"filter": filter_clauses(chunk_filter)}}}
    return {"knn": {VECTOR_FIELD: clause}}


def leg_body(query: Body, size: int) -> Body:
    """One leg searched on its own: its best `size` chunks, without their vectors."""
    return {"size": size, "query": query, "_source": SOURCE, "track_total_hits": False}


def hybrid_body(legs: Sequence[Body], pool: int, size: int, pipeline: Body | None = None) -> Body:
    """A hybrid query over the legs, each cut at `pool` per shard, fused by a search pipeline.

    `pipeline` is an inline (temporary) pipeline definition; without it the request must name
    a stored one in its `search_pipeline` parameter.
    """
    body: Body = {
        "size": size,
        "query": {"hybrid": {"queries": list(legs), "pagination_depth": pool}},
        "_source": SOURCE,
    }
    if pipeline is not None:
        body["search_pipeline"] = pipeline
    return body


def document_query(brain_id: str, document_id: str, *, first_only: bool = False) -> Body:
    clauses: list[Body] = [{"term": {"brain_id": brain_id}}, {"term": {"document_id": document_id}}]
    if first_only:
        clauses.append({"term": {"ordinal": 0}})
    return {"bool": {"filter": clauses}}


def brain_query(brain_id: str) -> Body:
    return {"bool": {"filter": [{"term": {"brain_id": brain_id}}]}}


# The chunk ids of one `ids` clause: well under index.max_terms_count (65,536), which an `ids`
# query counts against; a longer list is split over several clauses of one bool query.
IDS_PER_CLAUSE = 10_000


def _ids_clauses(chunk_ids: Sequence[str]) -> list[Body]:
    unique = list(dict.fromkeys(chunk_ids))
    return [
        {"ids": {"values": unique[start : start + IDS_PER_CLAUSE]}}
        for start in range(0, len(unique), IDS_PER_CLAUSE)
    ]


def _ids_filter(chunk_ids: Sequence[str]) -> Body:
    """Documents whose `_id` is one of `chunk_ids` (none when it is empty)."""
    clauses = _ids_clauses(chunk_ids)
    if len(clauses) <= 1:
        return clauses[0] if clauses else {"ids": {"values": []}}
    return {"bool": {"should": clauses, "minimum_should_match": 1}}


def chunks_query(brain_id: str, chunk_ids: Sequence[str]) -> Body:
    """The brain's chunks among `chunk_ids`."""
    return {"bool": {"filter": [_ids_filter(chunk_ids), {"term": {"brain_id": brain_id}}]}}


def staged_query(brain_id: str, document_id: str, chunk_ids: Sequence[str]) -> Body:
    """The document's inactive chunks among `chunk_ids`: those an activation switches on."""
    clauses = [_ids_filter(chunk_ids), *document_query(brain_id, document_id)["bool"]["filter"]]
    return {"bool": {"filter": [*clauses, {"term": {"active": False}}]}}


def others_query(brain_id: str, document_id: str, chunk_ids: Sequence[str]) -> Body:
    """The document's chunks not among `chunk_ids`: those an activation removes."""
    query = document_query(brain_id, document_id)
    if chunk_ids:
        query["bool"]["must_not"] = _ids_clauses(chunk_ids)
    return query


def bulk_bodies(
    index: str, chunks: Sequence[Chunk], matrix: Floats, max_bytes: int
) -> Iterator[tuple[bytes, int]]:
    """NDJSON `_bulk` bodies indexing the chunks (in order) into `index`, each at most
    `max_bytes` (or one chunk), with how many chunks each holds."""
    lines: list[bytes] = []
    size = 0
    for chunk, vector in zip(chunks, matrix.astype(np.float64).tolist(), strict=True):
        action = {"index": {"_index": index, "_id": chunk.id}}
        pair = (_ndjson(action) + _ndjson(to_source(chunk, vector))).encode("utf-8")
        if lines and size + len(pair) > max_bytes:
            yield b"".join(lines), len(lines)
            lines, size = [], 0
        lines.append(pair)
        size += len(pair)
    if lines:
        yield b"".join(lines), len(lines)


def _ndjson(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"
