"""What tools/list and initialize say about the Mnemosyne surface: the server's instructions and
each tool's description (behaviour, arguments, defaults, answer), as seed 003 documents them and as
Cairn answers (docs/MNEMOSYNE.md)."""

from __future__ import annotations

from typing import Final

from cairn.domain.libraries import LIBRARY_TYPES

TYPES: Final = ", ".join(LIBRARY_TYPES)
PAGING: Final = "`limit` defaults to 50 and is clamped into 1..200; `offset` (default 0) skips that many."

INSTRUCTIONS: Final = (
    "Mnemosyne (served by Cairn) is a retrieval surface, not a RAG pipeline: it returns ranked "
    "evidence with short previews, and you write the answer and cite the items. Usual workflow: "
    "list_libraries, then search (narrowed by library_uid or library_type), then get_chunk only for a "
    "candidate whose text_preview is not enough. Tools: search, get_chunk, list_libraries, "
    f"list_collections, list_items, get_health. Library types: {TYPES}. Only items whose "
    "embedding_status is completed are searchable. Every tool but get_health needs an "
    "`Authorization: Bearer <token>` header."
)

SEARCH: Final = (
    "Hybrid retrieval for `query` over the libraries you may read: vector similarity, full-text "
    "(BM25) and concept-graph candidates, fused with Reciprocal Rank Fusion (a rank r up to 20 "
    "in a leg adds the leg's weight / (60 + r); a full-text hit under 0.7 of the best BM25, or "
    "whose cosine with the query is under half the vector leg's best, adds nothing; "
    "candidates nothing adds to follow at score 0), then re-ordered by the configured "
    "re-ranker when `rerank` "
    "is true (default true). Narrow it with `library_uid`, `library_type` or `collection_uid`; "
    "`search_types` picks the legs (default all three: vector, fulltext, graph); `limit` (default "
    "20, clamped into 1..200) caps candidates and images. Returns {query, candidates: [{chunk_uid, "
    "item_uid, item_title, library_type, text_preview (about 500 characters), score, source "
    "(vector|fulltext|graph), library_uid, library_name (the library it came from)}], images, "
    "total_candidates, search_time_ms, reranker_used, "
    "reranker_model, search_types_used}; a library whose index cannot be read is left out and "
    "named in unsearched_libraries [{library_uid, library_name, code, message}] (present only then; "
    "a search of that library alone is refused). With `include_images` (default true), images lists "
    "matching image items as {image_uid, item_uid, item_title, image_type, description, s3_key, "
    "score, source, library_uid, library_name}, each scored by its own calibrated relevance to the "
    "query (0 to 1). Only "
    "completed items are searched; call get_chunk for a candidate's full text."
)
GET_CHUNK: Final = (
    "Return the whole text of one chunk, by the `chunk_uid` a search candidate carries: {chunk_uid, "
    "chunk_index, item_uid, item_title, library_type, text}. Worth a call only when the candidate's "
    "text_preview is too short to answer from; a chunk outside the libraries you may read is not found."
)
LIST_LIBRARIES: Final = (
    "List the libraries you are allowed to read, by name: {libraries: [{uid, name, library_type, "
    "description}], limit, offset}. Pass a library's uid or library_type to search to scope it. "
    f"{PAGING} Library types: {TYPES}."
)
LIST_COLLECTIONS: Final = (
    "List collections (named groups of items inside a library, such as a series of novels or a "
    "multi-volume manual), all you may read or only those of `library_uid`: {collections: [{uid, "
    "name, description, library_uid, library_name}], limit, offset}. A collection's uid scopes search "
    f"or list_items. {PAGING}"
)
LIST_ITEMS: Final = (
    "List indexed items (documents, files, images), all you may read or only those of `library_uid` "
    "or `collection_uid`: {items: [{uid, title, item_type, file_type, chunk_count, image_count, "
    "embedding_status}], limit, offset}. Only items whose embedding_status is completed show up in "
    f"search; chunk_count tells an item's size. {PAGING}"
)
GET_HEALTH: Final = (
    "Health check for monitoring pollers; no arguments and no credential needed. Returns {status: "
    "ok|degraded|error, checks: {neo4j (the record store and chunk index), s3 (the blob store), "
    "embedding, and reranker when one is configured: {status, duration_ms, model (embedding and "
    "re-ranker checks)}}}: a failing store or index makes the status error, a missing embedding "
    "model or re-ranker degraded."
)
