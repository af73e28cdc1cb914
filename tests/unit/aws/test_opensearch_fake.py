"""A fake OpenSearch cluster behind a real opensearch-py client, and the checks of the fake itself.

`fake_client(cluster)` is an `OpenSearch` whose only connection hands every request to
`FakeCluster.handle`: requests go through opensearch-py's own URL building and serialisation,
and `cluster.calls` records what would have gone over the wire. The cluster emulates the subset
of OpenSearch the chunk index uses, as documented: strict mappings, bulk, count, search with
bool/term/terms/prefix (on a text field: any token starting with it)/range/exists/match_none/
multi_match (Lucene-style BM25, fields summed for
most_fields, else the best field; operator `and`; type `phrase`), dot paths into flat_object
fields, knn with an efficient filter (faiss innerproduct scores), ids, bool must_not, sort +
search_after, msearch, delete/update by query (the index's own painless scripts, as the Python
they spell; `wait_for_completion=false` answers a task id, the update done), force merge
(segments are not modelled: it only answers), mapping reads and updates, search pipelines and
the hybrid query fused by `score-ranker-processor` (RRF over the sub-queries' positions, weights
per sub-query).
Analysis is folding + lowercasing, no stemming; as the standard tokenizer, each Han ideograph and
hiragana character is a token of its own, and a katakana run one apart from the letters beside
it. A query of more than 1,024 leaf queries (filters included, as Lucene counts them for
indices.query.bool.max_clause_count) is refused with 500 `too_many_nested_clauses`, as
OpenSearch 2.x answers, and a `terms` query of more than 65,536 values with 400
(index.max_terms_count).
Other test modules import it; the tests at the end pin the fake's RRF and BM25 behaviour.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from opensearchpy import Connection, OpenSearch

from cairn.adapters.aws.opensearch_schema import TAG_WORDS_BACKFILL
from cairn.adapters.local.fts_query import words
from cairn.domain.text import tag_words

Json = dict[str, Any]
MAX_CLAUSE_COUNT = 1024
MAX_TERMS_COUNT = 65_536
_IDEOGRAPH = re.compile("([\u3040-\u309f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f])")
_KATAKANA = re.compile("([\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]+)")
_SCRIPTS = {  # the painless scripts the chunk index sends, as updates of (params, the source)
    "ctx._source.context = params.context": lambda params, source: {"context": params["context"]},
    "ctx._source.active = true": lambda params, source: {"active": True},
    # spells domain/text.py tag_words; run here as that function, never on a real cluster
    TAG_WORDS_BACKFILL: lambda params, source: {"tag_words": tag_words(source["tags"])},
}


@dataclass
class Call:
    method: str
    path: str
    params: dict[str, Any]
    body: Any  # parsed JSON, a list for NDJSON bodies, None without a body
    raw: bytes | None = None


@dataclass
class FakeIndex:
    body: Json
    docs: dict[str, Json] = field(default_factory=dict)
    order: dict[str, int] = field(default_factory=dict)  # Lucene doc order: a re-index moves to the end

    @property
    def properties(self) -> Json:
        props: Json = self.body["mappings"]["properties"]
        return props


class FakeCluster:
    def __init__(self, version: str = "3.1.0", distribution: str = "opensearch") -> None:
        self.info = {"version": {"number": version, "distribution": distribution}}
        self.indices: dict[str, FakeIndex] = {}
        self.pipelines: dict[str, Json] = {}
        self.calls: list[Call] = []
        self._seq = 0
        self._lock = threading.Lock()  # one request at a time, like a single-threaded node
        self._stats: dict[str, tuple[dict[str, list[str]], float]] = {}  # per request
        self._df: dict[tuple[str, str], int] = {}  # (field, term) -> documents holding it, per request
        self._tokens: dict[str, list[str]] = {}  # text -> its tokens (callers never change the lists)

    # -- transport ------------------------------------------------------------------------

    def handle(self, method: str, path: str, params: Mapping[str, Any], raw: bytes | None) -> tuple[int, Any]:
        with self._lock:
            self._stats, self._df = {}, {}
            return self._handle(method, path, params, raw)

    def _handle(
        self, method: str, path: str, params: Mapping[str, Any], raw: bytes | None
    ) -> tuple[int, Any]:
        parts = [p for p in path.split("/") if p]
        ndjson = bool(parts) and parts[-1] in ("_bulk", "_msearch")
        body = _parse(raw, ndjson)
        self.calls.append(
            Call(method, path, dict(params), body, raw.encode() if isinstance(raw, str) else raw)
        )
        if not parts:
            return 200, self.info
        if parts[:2] == ["_search", "pipeline"]:
            return self._pipeline(method, parts[2], body)
        if parts == ["_bulk"]:
            return 200, self._bulk(body)
        if parts == ["_msearch"]:
            return 200, {
                "responses": [self._msearch_one(h, b) for h, b in zip(body[::2], body[1::2], strict=True)]
            }
        name, action = parts[0], (parts[1] if len(parts) > 1 else None)
        if action is None:
            return self._index_admin(method, name, body)
        if name not in self.indices:
            return 404, _error("index_not_found_exception", f"no such index [{name}]")
        index = self.indices[name]
        if action == "_search":
            return self._search(index, body or {}, params)
        if action == "_count":
            return 200, {"count": len(self._matching(index, (body or {}).get("query")))}
        if action == "_delete_by_query":
            matched = self._matching(index, body["query"])
            for doc_id in matched:
                del index.docs[doc_id]
            return 200, {"deleted": len(matched)}
        if action == "_update_by_query":
            script = body["script"]
            if script["source"] not in _SCRIPTS:
                return 400, _error("script_exception", "unsupported script")
            update = _SCRIPTS[script["source"]]
            matched = self._matching(index, body["query"])
            for doc_id in matched:
                source = index.docs[doc_id]
                index.docs[doc_id] = {**source, **update(script.get("params", {}), source)}
            if str(params.get("wait_for_completion")) == "false":  # done at once, here
                self._seq += 1
                return 200, {"task": f"fake-node:{self._seq}"}
            return 200, {"updated": len(matched)}
        if action == "_forcemerge" and method == "POST":  # no segments here: nothing to expunge
            return 200, {"_shards": {"total": 1, "successful": 1, "failed": 0}}
        if action == "_mapping" and method == "PUT":  # adding fields to a strict mapping, or _meta
            index.properties.update(body.get("properties", {}))
            if "_meta" in body:  # replaced whole, as OpenSearch does
                index.body["mappings"]["_meta"] = body["_meta"]
            return 200, {"acknowledged": True}
        if action == "_mapping" and method == "GET":
            return 200, {name: {"mappings": index.body["mappings"]}}
        return 400, _error("illegal_argument_exception", f"unsupported {method} {path}")

    def _index_admin(self, method: str, name: str, body: Any) -> tuple[int, Any]:
        if method == "HEAD":
            return (200 if name in self.indices else 404), None
        if method == "PUT":
            if name in self.indices:
                return 400, _error("resource_already_exists_exception", f"index [{name}] already exists")
            self.indices[name] = FakeIndex(body)
            return 200, {"acknowledged": True, "index": name}
        if method == "DELETE":
            self.indices.pop(name, None)
            return 200, {"acknowledged": True}
        return 400, _error("illegal_argument_exception", "unsupported")

    def _pipeline(self, method: str, name: str, body: Any) -> tuple[int, Any]:
        if method == "PUT":
            self.pipelines[name] = body
            return 200, {"acknowledged": True}
        if name not in self.pipelines:
            return 404, {}
        return 200, {name: self.pipelines[name]}

    # -- writes ---------------------------------------------------------------------------

    def _bulk(self, lines: list[Json]) -> Json:
        items, errors = [], False
        for action, source in zip(lines[::2], lines[1::2], strict=True):
            meta = action["index"]
            index = self.indices[meta["_index"]]
            problem = self._invalid(index, source)
            if problem:
                errors = True
                items.append({"index": {"_id": meta["_id"], "status": 400, "error": problem}})
                continue
            index.docs[meta["_id"]] = source
            self._seq += 1
            index.order[meta["_id"]] = self._seq
            items.append({"index": {"_id": meta["_id"], "status": 201}})
        return {"took": 1, "errors": errors, "items": items}

    @staticmethod
    def _invalid(index: FakeIndex, source: Json) -> Json | None:
        unknown = set(source) - set(index.properties)
        if unknown:
            return {"type": "strict_dynamic_mapping_exception", "reason": f"unknown fields {sorted(unknown)}"}
        dimension = index.properties["embedding"]["dimension"]
        if len(source.get("embedding", [])) != dimension:
            return {"type": "mapper_parsing_exception", "reason": "wrong vector dimension"}
        return None

    # -- search ---------------------------------------------------------------------------

    def _msearch_one(self, header: Json, body: Json) -> Json:
        status, response = self._search(self.indices[header["index"]], body, {})
        return response if status == 200 else {**response, "status": status}

    def _search(self, index: FakeIndex, body: Json, params: Mapping[str, Any]) -> tuple[int, Any]:
        query = body.get("query", {"match_all": {}})
        size = body.get("size", 10)
        if (terms := _most_terms(query)) > MAX_TERMS_COUNT:
            reason = f"The number of terms [{terms}] used in the Terms Query request has exceeded "
            reason += f"the allowed maximum of [{MAX_TERMS_COUNT}]"
            return 400, _error("illegal_argument_exception", reason)
        if (leaves := _leaves(query)) > MAX_CLAUSE_COUNT:
            reason = f"Query contains too many nested clauses ({leaves}); maxClauseCount is set to 1024"
            return 500, _error("too_many_nested_clauses", reason)
        if "hybrid" in query:
            pipeline = body.get("search_pipeline") or self.pipelines.get(params.get("search_pipeline", ""))
            if not isinstance(pipeline, dict):
                return 400, _error("illegal_argument_exception", "hybrid query without a search pipeline")
            ranked = self._hybrid(index, query["hybrid"], pipeline, size)
        else:
            ranked = self._ranked(index, query)
        if "sort" in body:
            ranked = self._sorted(index, ranked, body["sort"], body.get("search_after"))
        source = body.get("_source", {})
        if isinstance(source, list):  # a list of fields is `includes`, as OpenSearch reads it
            source = {"includes": source}
        excludes = set(source.get("excludes", []))
        includes = source.get("includes")
        hits = []
        for doc_id, score, sort in ranked[:size]:
            kept = _without(index.docs[doc_id], excludes)
            if includes is not None:
                kept = {k: v for k, v in kept.items() if k in includes}
            hit = {"_id": doc_id, "_score": score, "_source": kept}
            if sort is not None:
                hit["sort"] = sort
            hits.append(hit)
        return 200, {"took": 1, "hits": {"hits": hits}}

    def _hybrid(self, index: FakeIndex, hybrid: Json, pipeline: Json, size: int) -> list[Any]:
        depth = hybrid.get("pagination_depth", size)
        combination = pipeline["phase_results_processors"][0]["score-ranker-processor"]["combination"]
        k = combination.get("rank_constant", 60)
        weights = combination.get("parameters", {}).get("weights") or [1.0] * len(hybrid["queries"])
        scores: dict[str, float] = {}
        for weight, sub in zip(weights, hybrid["queries"], strict=True):
            for rank, (doc_id, _score, _sort) in enumerate(self._ranked(index, sub)[:depth], start=1):
                scores[doc_id] = scores.get(doc_id, 0.0) + weight / (k + rank)
        return sorted(((d, s, None) for d, s in scores.items()), key=lambda t: (-t[1], index.order[t[0]]))

    def _ranked(self, index: FakeIndex, query: Json) -> list[Any]:
        scored = [(doc_id, self._score(index, query, doc_id)) for doc_id in index.docs]
        hits = [(d, s, None) for d, s in scored if s is not None]
        hits.sort(key=lambda t: (-t[1], index.order[t[0]]))
        if "knn" in query:
            hits = hits[: next(iter(query["knn"].values()))["k"]]
        return hits

    def _matching(self, index: FakeIndex, query: Json | None) -> list[str]:
        return [d for d, _s, _ in self._ranked(index, query or {"match_all": {}})]

    @staticmethod
    def _sorted(index: FakeIndex, ranked: list[Any], sort: list[Json], after: list[Any] | None) -> list[Any]:
        fields = [next(iter(key)) for key in sort]
        keyed = [(d, s, [index.docs[d][f] for f in fields]) for d, s, _ in ranked]
        keyed.sort(key=lambda t: t[2])
        return [t for t in keyed if after is None or t[2] > list(after)]

    def _score(self, index: FakeIndex, query: Json, doc_id: str) -> float | None:
        """The query's score for the document, None when it does not match."""
        ((kind, spec),) = query.items()
        doc = index.docs[doc_id]
        if kind == "match_all":
            return 1.0
        if kind == "bool":
            return self._bool(index, spec, doc_id)
        if kind == "multi_match":
            return self._bm25(index, spec, doc_id)
        if kind == "ids":
            return 1.0 if doc_id in spec["values"] else None
        if kind == "knn":
            ((fld, clause),) = spec.items()
            if "filter" in clause and self._score(index, clause["filter"], doc_id) is None:
                return None
            ip = sum(a * b for a, b in zip(doc[fld], clause["vector"], strict=True))
            return ip + 1.0 if ip >= 0 else 1.0 / (1.0 - ip)
        if kind == "match_none":
            return None
        if kind == "exists":
            return 1.0 if _lookup(index, doc, spec["field"]) not in (None, []) else None
        ((fld, value),) = spec.items()
        found = _lookup(index, doc, fld)
        values = found if isinstance(found, list) else [found]
        if kind == "term":
            return 1.0 if _same(value, values) else None
        if kind == "terms":
            return 1.0 if any(_same(v, values) for v in value) else None
        if kind == "prefix" and index.properties.get(fld, {}).get("type") == "text":
            return 1.0 if any(token.startswith(value) for token in self._words(found or "")) else None
        if kind == "prefix":
            return 1.0 if isinstance(found, str) and found.startswith(value) else None
        if kind == "range":
            return 1.0 if _in_range(index, fld, found, value) else None
        raise AssertionError(f"the fake does not know {kind}")

    def _bool(self, index: FakeIndex, spec: Json, doc_id: str) -> float | None:
        total = 0.0
        for clause in spec.get("filter", []):
            if self._score(index, clause, doc_id) is None:
                return None
        for clause in spec.get("must_not", []):
            if self._score(index, clause, doc_id) is not None:
                return None
        for clause in spec.get("must", []):
            score = self._score(index, clause, doc_id)
            if score is None:
                return None
            total += score
        should = [self._score(index, clause, doc_id) for clause in spec.get("should", [])]
        if sum(s is not None for s in should) < spec.get("minimum_should_match", 0):
            return None
        return total + sum(s for s in should if s is not None)

    def _bm25(self, index: FakeIndex, spec: Json, doc_id: str) -> float | None:
        """A multi_match: per field a match (any term, or every term with operator `and`) or a
        match_phrase (type `phrase`: the words adjacent, scored by phrase frequency and the sum of
        the words' IDF, as Lucene's PhraseQuery); fields summed (most_fields) or the best one."""
        kind = spec.get("type", "best_fields")
        query = _analyzed(spec["query"])
        scores: list[float] = []
        for entry in spec["fields"]:
            name, _, boost = entry.partition("^")
            tokens, average = self._field(index, name)
            doc_tokens = tokens[doc_id]
            if kind == "phrase":
                parts = [(_phrase_count(doc_tokens, query), query)]
            elif spec.get("operator", "or") == "and" and not all(term in doc_tokens for term in query):
                continue
            else:
                parts = [(doc_tokens.count(term), [term]) for term in dict.fromkeys(query)]
            score, matched = 0.0, False
            for tf, group in parts:
                if not tf:
                    continue
                matched = True
                idf = sum(self._idf(index, name, term) for term in group)
                norm = tf / (tf + 1.2 * (0.25 + 0.75 * len(doc_tokens) / average))
                score += float(boost or 1.0) * idf * norm
            if matched:
                scores.append(score)
        if not scores:
            return None
        return sum(scores) if kind == "most_fields" else max(scores)

    def _idf(self, index: FakeIndex, name: str, term: str) -> float:
        if (name, term) not in self._df:  # counted once a request: a search asks for it per document
            tokens, _ = self._field(index, name)
            self._df[name, term] = sum(term in doc_tokens for doc_tokens in tokens.values())
        df = self._df[name, term]
        return math.log(1 + (len(index.docs) - df + 0.5) / (df + 0.5))

    def _words(self, text: str) -> list[str]:
        """A text's tokens, kept across requests: a search reads every document's field."""
        if text not in self._tokens:
            if len(self._tokens) >= _TOKENS_KEPT:
                self._tokens.clear()
            self._tokens[text] = _analyzed(text)
        return self._tokens[text]

    def _field(self, index: FakeIndex, name: str) -> tuple[dict[str, list[str]], float]:
        """Every document's tokens in one field, and their average count (cached per request)."""
        if name not in self._stats:
            tokens = {d: self._words(src.get(name) or "") for d, src in index.docs.items()}
            average = sum(map(len, tokens.values())) / max(len(tokens), 1) or 1.0
            self._stats[name] = (tokens, average)
        return self._stats[name]


_TOKENS_KEPT = 100_000


class FakeConnection(Connection):
    def __init__(self, cluster: FakeCluster | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        assert cluster is not None
        self.cluster = cluster

    def perform_request(
        self, method: str, url: str, params: Any = None, body: Any = None, timeout: Any = None,
        ignore: Any = (), headers: Any = None,
    ) -> tuple[int, dict[str, str], str]:  # fmt: skip
        status, data = self.cluster.handle(method, url, params or {}, body)
        raw = "" if data is None else json.dumps(data)
        if not 200 <= status < 300 and status not in ignore:
            self._raise_error(status, raw, "application/json")
        return status, {"content-type": "application/json"}, raw


def fake_client(cluster: FakeCluster) -> OpenSearch:
    return OpenSearch(hosts=[{"host": "fake.invalid", "port": 9200}], connection_class=FakeConnection,
                      cluster=cluster, max_retries=0)  # fmt: skip


def _parse(raw: bytes | str | None, ndjson: bool) -> Any:
    if raw is None:
        return None
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    if ndjson:
        # Lines end at "\n" alone, as OpenSearch reads them: a string may hold U+0085 or U+2028
        # (opensearch-py writes them as they are), which str.splitlines would also break at.
        return [json.loads(line) for line in text.split("\n") if line.strip()]
    return json.loads(text) if text else None


def _analyzed(text: str) -> list[str]:
    """The standard analyzer's tokens, as far as the fake models it (the module's docstring)."""
    parts = [part for word in words(text) for part in _IDEOGRAPH.split(word) if part]
    return [piece for part in parts for piece in _KATAKANA.split(part) if piece]


def _most_terms(query: Any) -> int:
    """The most values of any one `terms` query in the tree (index.max_terms_count)."""
    if isinstance(query, list):
        return max(map(_most_terms, query), default=0)
    if not isinstance(query, dict):
        return 0
    here = max((len(v) for v in query["terms"].values()), default=0) if "terms" in query else 0
    return max([here, *(_most_terms(v) for k, v in query.items() if k != "terms")])


def _leaves(query: Json) -> int:
    """The leaf queries Lucene counts against max_clause_count: a term (or terms, range, ...) is
    one, a multi_match one per field and token (a phrase one per field), a bool its clauses' sum
    and one more when it has only must_not (OpenSearch adds a match_all)."""
    ((kind, spec),) = query.items()
    if kind == "bool":
        parts = [clause for key in ("must", "filter", "should", "must_not") for clause in spec.get(key, [])]
        alone = not any(spec.get(key) for key in ("must", "filter", "should"))
        return sum(map(_leaves, parts)) + (1 if alone else 0)
    if kind == "multi_match":
        per_field = 1 if spec.get("type") == "phrase" else max(len(_analyzed(spec["query"])), 1)
        return per_field * len(spec["fields"])
    if kind == "knn":
        ((_field, clause),) = spec.items()
        return 1 + (_leaves(clause["filter"]) if "filter" in clause else 0)
    if kind == "hybrid":
        return sum(map(_leaves, spec["queries"]))
    return 1


def _phrase_count(tokens: list[str], phrase: list[str]) -> int:
    """How often the words of `phrase` stand next to each other, in order, in `tokens`."""
    size = len(phrase)
    return sum(tokens[i : i + size] == phrase for i in range(len(tokens) - size + 1)) if size else 0


def _error(kind: str, reason: str) -> Json:
    return {"error": {"root_cause": [{"type": kind, "reason": reason}], "type": kind, "reason": reason}}


def _without(source: Json, excludes: set[str]) -> Json:
    return {key: value for key, value in source.items() if key not in excludes}


def _lookup(index: FakeIndex, doc: Json, name: str) -> Any:
    """A field's value; `parent.key` reaches a key of a flat_object field (its values keywords)."""
    parent, dot, key = name.partition(".")
    if dot and index.properties.get(parent, {}).get("type") == "flat_object":
        inner = doc.get(parent) or {}
        return inner.get(key)
    return doc.get(name)


def _same(value: Any, values: list[Any]) -> bool:
    """A term matches a stored value of the same kind (True is not 1, as a boolean field knows)."""
    return any(type(value) is type(v) and value == v for v in values)


_BOUNDS = {"gte": float.__ge__, "gt": float.__gt__, "lte": float.__le__, "lt": float.__lt__}


def _in_range(index: FakeIndex, name: str, found: Any, spec: Json) -> bool:
    """A range on a date (bounds in epoch_millis, as the adapter sends them) or a number field."""
    if found is None:
        return False  # a document without the field never matches a range
    kind = index.properties[name]["type"]
    if kind == "date":
        assert spec.get("format") == "epoch_millis", spec
        found = _epoch_ms(str(found))
    else:
        assert kind in ("double", "float", "integer", "long"), kind
    return all(test(float(found), float(spec[op])) for op, test in _BOUNDS.items() if op in spec)


def _epoch_ms(value: str) -> int:
    from datetime import datetime

    from cairn.adapters.local.chunk_schema import epoch_ms

    return epoch_ms(datetime.fromisoformat(value))


# -- the fake's own behaviour ------------------------------------------------------------------


def _cluster_with(docs: dict[str, Json]) -> FakeCluster:
    cluster = FakeCluster()
    props = {"text": {"type": "text"}, "embedding": {"type": "knn_vector", "dimension": 2}}
    cluster.indices["i"] = FakeIndex({"mappings": {"properties": props}})
    for doc_id, source in docs.items():
        cluster._bulk([{"index": {"_index": "i", "_id": doc_id}}, source])
    return cluster


def test_fake_hybrid_fuses_by_weighted_reciprocal_rank() -> None:
    cluster = _cluster_with(
        {
            "a": {"text": "heron heron", "embedding": [0.0, 1.0]},
            "b": {"text": "heron", "embedding": [1.0, 0.0]},
        }
    )
    client = fake_client(cluster)
    pipeline = {"phase_results_processors": [{"score-ranker-processor": {"combination": {
        "technique": "rrf", "rank_constant": 10, "parameters": {"weights": [0.8, 0.2]}}}}]}  # fmt: skip
    bm25 = {"multi_match": {"query": "heron", "fields": ["text"], "type": "most_fields"}}
    knn = {"knn": {"embedding": {"vector": [1.0, 0.0], "k": 2}}}
    body = {"query": {"hybrid": {"queries": [bm25, knn]}}, "search_pipeline": pipeline}
    hits = client.search(index="i", body=body)["hits"]["hits"]
    # a: BM25 rank 1, k-NN rank 2; b: BM25 rank 2, k-NN rank 1
    assert [h["_id"] for h in hits] == ["a", "b"]
    assert hits[0]["_score"] == 0.8 / 11 + 0.2 / 12
    assert hits[1]["_score"] == 0.8 / 12 + 0.2 / 11


def test_fake_refuses_a_hybrid_query_without_a_pipeline_and_unknown_fields() -> None:
    cluster = _cluster_with({"a": {"text": "x", "embedding": [1.0, 0.0]}})
    client = fake_client(cluster)
    bulk = client.bulk(body=[{"index": {"_index": "i", "_id": "z"}}, {"nope": 1, "embedding": [1.0, 0.0]}])
    assert bulk["errors"] is True
    from opensearchpy import RequestError

    try:
        client.search(index="i", body={"query": {"hybrid": {"queries": [{"match_all": {}}]}}})
    except RequestError as exc:
        assert exc.status_code == 400
    else:
        raise AssertionError("expected a 400")


def test_fake_answers_the_force_merge_a_scrub_sends() -> None:
    from cairn.adapters.aws.opensearch_chunks import OpenSearchChunkIndex

    cluster = FakeCluster()
    OpenSearchChunkIndex(fake_client(cluster), 2, refresh="true").scrub("b1")
    call = cluster.calls[-1]
    assert (call.method, call.path, call.params) == (
        "POST",
        "/cairn-chunks-2/_forcemerge",
        {"only_expunge_deletes": "true"},
    )
