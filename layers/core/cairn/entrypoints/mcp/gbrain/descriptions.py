"""What tools/list and initialize say about the gbrain surface: the server's instructions and each
tool's description (behaviour, arguments, defaults, formulas, answer), as seed 002 documents them
and as Cairn answers (docs/GBRAIN.md)."""

from __future__ import annotations

from typing import Final

from cairn.domain.pages import MAX_LIMIT

READS: Final = (
    "Reads `collection` when given, else the only active collection, else the default one (named `default`)."
)
WING: Final = (
    "`wing` keeps pages whose first slug segment equals it (`people` for `people/alice`, "
    "`general` for a slug without `/`)."
)
TEMPORAL: Final = (
    "`temporal`: `current` (the default, also spelt `active`) keeps links valid today; `all` (or "
    "`history`) includes closed and not-yet-valid ones."
)

INSTRUCTIONS: Final = (
    "gbrain personal knowledge brain, served by Cairn. Knowledge lives in markdown pages "
    "addressed by slug (`people/alice`, or collection-qualified `work::people/alice`): "
    "frontmatter, compiled truth, then a timeline after a `---` line. Read with brain_get, "
    "brain_list, brain_search (keywords) and brain_query (hybrid); write with brain_put, giving "
    "expected_version to update an existing page; connect pages with brain_link and explore with "
    "brain_backlinks, brain_graph and brain_timeline; find contradictions with brain_check; log "
    "unanswered questions with brain_gap. Every failure is a JSON-RPC error: -32602 invalid "
    "params, -32001 not found, -32002 ambiguous slug or restoring collection, -32009 version "
    "conflict, -32003 anything else."
)

GET: Final = (
    "Read page `slug` and return it as rendered markdown: the frontmatter with its keys sorted "
    "(plus `gbrain_id` and the collection-qualified `slug`), the compiled truth, a `---` line, "
    "then the timeline. `slug` may be bare (`people/alice`) or collection-qualified "
    "(`work::people/alice`). Errors: unknown page -32001; a bare slug held by several "
    "collections -32002 (data lists the candidates); an invalid slug -32602."
)
PUT: Final = (
    "Create or replace page `slug`, with optimistic concurrency. `content` is the whole page: "
    "optional frontmatter between `---` lines (scalar keys such as title and type), the compiled "
    "truth, then optionally a `---` line and the timeline; at most 1 MiB. Omit "
    "`expected_version` to create a page that must not exist yet; to replace one, give its "
    "current version (a page starts at version 1 and every write adds one). Answers `Created "
    "<collection>::<slug> (version N)` or `Updated ...`. A missed version is error -32009 with "
    "data {current_version}; a read-only collection -32003; a restoring one -32002."
)
QUERY: Final = (
    "Hybrid search for `query` over one collection's pages: full-text keywords and semantic "
    "similarity merged. A query that is one existing page's slug (optionally `[[slug]]`) answers "
    "that page alone, score 1.0. Otherwise a page scores 0.4 x keyword score / best keyword "
    "score + 0.6 x similarity / best similarity (the semantic side keeps its 10 best pages), the "
    "whole scaled by how well the best page answers the query on Cairn's calibrated 0-1 "
    "relevance; ties by slug. Returns a JSON array of {slug, title, summary, score, wing, collection}, at "
    "most `limit` (default 10, at most 1000). Fewer than 2 results, or none scoring 0.3, logs "
    'the query as a knowledge gap (only its hash). `depth` set to "auto" appends pages reached along '
    "current outbound links, up to 3 hops, while their cost "
    "(compiled-truth characters / 4) fits a 4000-token budget, each with score 0. " + READS + " " + WING
)
SEARCH: Final = (
    "Full-text keyword search (BM25) for `query` over one collection's pages, no semantic side. "
    "Returns a JSON array of {slug, title, snippet, summary, score, wing, collection}, best first, at most "
    "`limit` (default 10, at most 1000); `score` is the BM25 score the index reports (higher is "
    "better, not normalised). Words match stemmed and case-insensitively; pages holding more of "
    "them rank higher. " + READS + " " + WING
)
LIST: Final = (
    "List one collection's pages, most recently updated first, as a JSON array of {slug, type, "
    "summary}. `page_type` keeps pages whose frontmatter `type` equals it (`concept` when a page "
    f"has none); `limit` defaults to 50, at most {MAX_LIMIT}. " + READS + " " + WING
)
LINK: Final = (
    "Link page `from_slug` to page `to_slug` with a typed, time-bounded relationship; both pages "
    "must exist in the same collection. `relationship` is 1-64 characters of [a-z0-9_-] (e.g. "
    "works_at). `valid_from` and `valid_until` take YYYY-MM, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ "
    "and leave the interval open when omitted. With `valid_until`, an open link of the same "
    "pages and relationship is closed instead of a new one added. Answers `Linked <from> → <to> "
    "(<relationship>)`; brain_backlinks lists the link ids."
)
LINK_CLOSE: Final = (
    "End a link's validity: set `valid_until` (YYYY-MM, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ) on "
    "the link numbered `link_id` (the `id` brain_backlinks shows). Answers `Closed link <id> "
    "valid_until=<value>`; an unknown id is error -32001."
)
BACKLINKS: Final = (
    "List the links pointing at page `slug`, newest first, as a JSON array of {id, from_slug, "
    f"relationship, valid_from, valid_until}}. `limit` defaults to 100, at most {MAX_LIMIT}. " + TEMPORAL
)
GRAPH: Final = (
    "The neighbourhood of page `slug`: breadth-first along outbound links for `depth` hops "
    "(default 2, at most 10), at most 1000 nodes and edges. Returns JSON {nodes: [{slug, type, "
    "title}], edges: [{from, "
    "to, relationship, valid_from, valid_until}]} with the starting page first. " + TEMPORAL
)
CHECK: Final = (
    "Find contradictions: two different pages giving one subject's attribute different values. "
    "Statements are read from frontmatter fields and `Key: value` lines (about the page's own "
    "subject) and from sentences such as `X is the CEO of Y`, `X works at Y`, `X founded Y`, `X "
    "is a Y`; values one page gives together never contradict each other. With `slug`, only "
    "contradictions involving that page; without it, every page of every collection you can "
    "read. Returns a JSON array of {page_slug, other_page_slug, type: assertion_conflict, "
    "description, detected_at}."
)
TIMELINE: Final = (
    "The timeline entries of page `slug`: the text after the `---` line that ends its compiled truth, split "
    "into entries at lines holding only `---`. Returns JSON {slug, entries: [string]}, at most "
    f"`limit` entries (default 20, at most {MAX_LIMIT})."
)
TAGS: Final = (
    "List, add or remove the tags of page `slug`. Without `add` and `remove` it only lists; "
    "otherwise it adds, then removes (each tag 1-64 characters of [a-z0-9_-], at most 100 per "
    "list), writing a new page version. Returns the page's tags afterwards as a sorted JSON "
    "array."
)
GAP: Final = (
    "Log a knowledge gap, a question the brain could not answer, without keeping the question: "
    "only the SHA-256 hash of `query` is stored. `context` (at most 500 characters) is checked "
    "and never stored; `slug` ties the gap to a page. The same query logged again returns the "
    "gap already there. Returns JSON {id, query_hash, page_id}."
)
GAPS: Final = (
    "List knowledge gaps, newest first, as a JSON array of {id, page_id, query_hash, context, "
    "confidence_score, sensitivity, resolved_at, resolved_by_slug, detected_at}. `resolved` "
    "(default false) lists open gaps only; true lists every gap, resolved or not. `limit` "
    f"defaults to 20, at most {MAX_LIMIT}."
)
STATS: Final = (
    "Counts over the collections you can read, as JSON {page_count, link_count, assertion_count, "
    "contradiction_count, gap_count, embedding_count, active_model, db_size_bytes}: pages, links "
    "from them (open and closed), the assertions and contradictions brain_check finds, gaps "
    "logged, indexed chunks of the pages, the embedding model and the bytes of the pages' text. "
    "No arguments."
)
COLLECTIONS: Final = (
    "One entry per collection (a Cairn brain) you can read, ordered by name, as a JSON array of "
    "{name, root_path, state (active|detached|restoring), writable, is_write_target, page_count, "
    "last_sync_at, embedding_queue_depth, ignore_parse_errors, needs_full_sync, "
    "recovery_in_progress, integrity_blocked, restore_in_progress}. The default collection is "
    "named `default`. No arguments."
)
RAW: Final = (
    "Keep raw structured data for page `slug` (an API response, a JSON record) under a `source` "
    "label such as crustdata, exa or meeting. `data` must be a JSON object, not an array or a "
    "scalar, of at most 1 MiB. A page keeps one row per source: storing a source again fails "
    "(-32003) unless `overwrite` is true (default false). Returns JSON {id}."
)
