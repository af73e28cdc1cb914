"""The OpenSearch chunk index's definitions, and the mapping between a stored document and a Chunk.

The index body (settings + mapping) and the RRF search pipeline are JSON files. The canonical
ones are infra/opensearch/*.json, what an operator reads or applies by hand at deploy; the
package ships identical copies in opensearch/ beside this module, because a Lambda bundle carries
the package and not the repository (a unit test asserts the two stay byte-identical). The index
file's vector dimension is a placeholder: `index_body` sets the adapter's own.

A stored document is the Chunk's JSON (datetimes as ISO-8601 strings, so `created_at` keeps its
microseconds while its `date` field filters at millisecond resolution, as the embedded index does)
plus the unit-length vector under `embedding`, which searches never fetch, and the words of its
tags as text under `tag_words`, which the BM25 leg matches and reads never fetch either.

`facets` (the keyword fields of a chunk's memory: type, client_id, ..., any names) is a
`flat_object` (OpenSearch 2.7+; keys with dots need 2.12+): the whole object is one field of the
mapping, its values are exact keywords reached by dot path (`facets.client_id`). Mapping each
name as its own keyword (an object with a dynamic template) would add a field to the mapping,
through the cluster manager, the first time any client used a new name, in an index every brain
shares, until the mapping's field limit refused writes. `importance` is a `double`, so
`importance_min` compares the value as stored, without float32 rounding.

Fields added to the mapping after indexes were first created (ADDED_FIELDS) are put into an
existing index's mapping when the adapter opens it; adding a field is always allowed. Chunks
stored before `tag_words` existed get theirs from an `_update_by_query` (TAG_WORDS_BACKFILL, a
painless script spelling domain/text.py `tag_words`) started when an index whose mapping's
`_meta` does not yet list the upgrade (UPGRADES) is opened; the upgrade is listed once the
cluster has accepted the task. An index created now lists it from the start.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from cairn.domain.models import Chunk
from cairn.domain.text import tag_words

INDEX_FILE = "chunks-index.json"
PIPELINE_FILE = "hybrid-pipeline.json"
VECTOR_FIELD = "embedding"
TAG_WORDS = "tag_words"
"""The words of the chunk's tags as text (domain/text.py `tag_words`), for the BM25 leg only."""
RRF_PROCESSOR = "score-ranker-processor"
ADDED_FIELDS = ("fingerprint", "current", "facets", "importance", TAG_WORDS)
UPGRADES = "cairn_upgrades"  # the key in the mapping's `_meta` listing the data upgrades done
TAG_WORDS_BACKFILL = """List words = new ArrayList();
for (def tag : ctx._source.tags) {
  String t = tag;
  int at = t.indexOf(':');
  String word = at < 0 ? '' : t.substring(at + 1);
  if (word.isEmpty()) { word = t; }
  if (!word.trim().isEmpty()) { words.add(word); }
}
ctx._source.tag_words = String.join(' ', words);"""

Body = dict[str, Any]


@cache
def _text(name: str) -> str:
    return resources.files("cairn.adapters.aws").joinpath("opensearch", name).read_text("utf-8")


def resource_text(name: str) -> str:
    """The packaged copy of an infra/opensearch file, as text."""
    return _text(name)


def index_body(dimension: int) -> Body:
    """Settings and mapping of a chunk index whose vectors have `dimension` floats."""
    body: Body = json.loads(_text(INDEX_FILE))
    body["mappings"]["properties"][VECTOR_FIELD]["dimension"] = dimension
    return body


def missing_fields(dimension: int, properties: Mapping[str, Any]) -> Body:
    """The mapping update adding the ADDED_FIELDS an index's `properties` lack ({} when none)."""
    wanted = index_body(dimension)["mappings"]["properties"]
    missing = {name: wanted[name] for name in ADDED_FIELDS if name not in properties}
    return {"properties": missing} if missing else {}


def upgrades_done(mappings: Mapping[str, Any]) -> list[str]:
    """The data upgrades an index with these `mappings` has had (TAG_WORDS, or none)."""
    return list((mappings.get("_meta") or {}).get(UPGRADES) or [])


def tag_words_backfill() -> Body:
    """The `_update_by_query` giving each tagged chunk stored without `tag_words` its words."""
    return {
        "query": {
            "bool": {
                "filter": [{"exists": {"field": "tags"}}],
                "must_not": [{"exists": {"field": TAG_WORDS}}],
            }
        },
        "script": {"source": TAG_WORDS_BACKFILL, "lang": "painless"},
    }


def upgraded_meta(mappings: Mapping[str, Any], upgrade: str) -> Body:
    """The mapping update listing `upgrade` as done, keeping the rest of `_meta`."""
    meta = dict(mappings.get("_meta") or {})
    meta[UPGRADES] = sorted({*(meta.get(UPGRADES) or []), upgrade})
    return {"_meta": meta}


def pipeline_body(rank_constant: int | None = None, weights: Sequence[float] | None = None) -> Body:
    """The RRF search pipeline; with arguments, a variant for one request (an inline pipeline).

    `weights` (one per hybrid sub-query, summing to 1) need OpenSearch 3.1 or later.
    """
    body: Body = json.loads(_text(PIPELINE_FILE))
    combination = body["phase_results_processors"][0][RRF_PROCESSOR]["combination"]
    if rank_constant is not None:
        combination["rank_constant"] = rank_constant
    if weights is not None:
        combination["parameters"] = {"weights": list(weights)}
    return body


def pipeline_rank_constant() -> int:
    """The rank constant the named pipeline is created with."""
    combination = pipeline_body()["phase_results_processors"][0][RRF_PROCESSOR]["combination"]
    return int(combination.get("rank_constant", 60))


def to_source(chunk: Chunk, vector: Sequence[float]) -> Body:
    source: Body = chunk.model_dump(mode="json")
    source[TAG_WORDS] = tag_words(chunk.tags)
    source[VECTOR_FIELD] = list(vector)
    return source


def from_source(source: Mapping[str, Any]) -> Chunk:
    fields = {key: value for key, value in source.items() if key not in (VECTOR_FIELD, TAG_WORDS)}
    return Chunk.model_validate(fields)


def similarity(score: float) -> float:
    """The inner product (cosine, on unit vectors) behind a faiss `innerproduct` k-NN score.

    OpenSearch scores a distance d = -ip as 1 / (1 + d) when d >= 0, else 1 - d.
    """
    return score - 1.0 if score >= 1.0 else 1.0 - 1.0 / score
