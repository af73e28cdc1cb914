"""What tools/list says about each canonical `memory_*` tool: behaviour, arguments, defaults, limits,
formulas, answer and errors, as the Jeffs Brain tool set documents them and as Cairn behaves
(services/search, services/ingest, services/sessions, services/memory; docs/RELEVANCE.md,
docs/MEMORY.md, docs/SESSIONS.md). Where Cairn deliberately differs from Jeffs Brain, the text says
what Cairn does. Numbers marked "by default" are server settings (config.py)."""

from __future__ import annotations

from typing import Final

from cairn.services.ingest.inputs import MAX_TAG, MAX_TAGS, MAX_TITLE
from cairn.services.search.ask import PREVIEW_CHARS
from cairn.services.search.relevance import EMBEDDED, GOOD_MATCH, KEYWORD_SHARE, VECTOR_SHARE
from cairn.services.search.restatements import LEEWAY, RESTATEMENT
from cairn.services.search.service import RERANK_POOL

BRAIN: Final = (
    "Brain id (`brn_…`) or slug. Omitted: the server's default brain (JBMCP_DEFAULT_BRAIN), else the "
    "oldest brain of the caller's own tenant it may use. An empty string is refused (validation_error); "
    "a name matching no brain is no_brain."
)
ERRORS: Final = "Errors (isError, text JSON {code, message}):"
SCOPES: Final = "global = memory/global/, project = memory/project/, agent = memory/agent/"
HIT_LINES: Final = "the text lists the top 5 hits as `#N score=S path` plus their first 320 characters"

SEARCH: Final = (
    "Search a brain's notes: the best-matching passages, citable by path, document_id and chunk_id. "
    "`query` (1-4096 characters) matches by meaning and words (stemmed, OR-ed); "
    '"phrase", pre*, AND, OR, NOT (caps) narrow words; NOT drops documents. One hit per '
    "document (its best chunk), at most `top_k` (1-100, default 10). `scope`: "
    f"{SCOPES}; `all` or omitted = the whole brain. `sort`: "
    f"`relevance` (default) orders by blend = {VECTOR_SHARE} x cosine scaled 0-1 over the candidates + "
    f"{KEYWORD_SHARE} x BM25 / best BM25, then a later note restating one above it (cosine >= "
    f"{RESTATEMENT:.2f}, query cosine within {LEEWAY:.2f}, saying what changed: moved, instead, no longer) "
    "takes its place and score; `recency` puts the newest of the best max(5 x top_k, 50) "
    "first; `relevance_then_recency` breaks near-ties (blend to 3 digits) by recency. "
    "score = blend / best blend x the best hit relevance, where relevance = "
    f"1 / (1 + exp(-{EMBEDDED.slope:g} x (cosine - {EMBEDDED.midpoint:.2f}))) on the built-in model: the "
    f"top score means the same in every query; a top hit at or above {GOOD_MATCH} likely answers it. "
    f"A configured re-ranker orders the first {RERANK_POOL} documents. Returns {{query, "
    "brain_id, hits: [{score, path, content (the passage), chunk_id, document_id, brain_id, brain (its "
    "slug), title, "
    "metadata, component_scores {bm25_rank, vector_rank, bm25, vector, blend, relevance}, highlights "
    "(up to 3 sentences with the query's words), created_at, "
    f"updated_at}}], took_ms}}; {HIT_LINES}. {ERRORS} validation_error, no_brain, forbidden."
)

RECALL: Final = (
    "Recall what a brain holds about a query. Without `session_id`: exactly memory_search with sort "
    "relevance (same hits, scores and {query, brain_id, hits, took_ms}). With `session_id` (a session of "
    "this brain, opened with POST /v1/brains/{brainId}/sessions) its newest messages weight the recall: "
    "the query's results are one list of weight 1; each of the 6 newest user/assistant messages m_i "
    "(i = 0 newest) adds the results for the query plus its first 400 characters, weight 0.5 x 0.7^i x "
    "a gate rising from 0 at query-message cosine 0.3 to 1 at 0.6. Per document, score = sum of weight "
    "/ (60 + rank), plus 1/61 for notes written in the session (metadata.session_id); hits repeating a "
    "recent message move last (numbers are defaults). That mode returns {chunks: [hits]} in "
    "memory_search's hit shape, component_scores {query_rank, context_rank, echo}. `query`: 1-4096 "
    f"characters; `top_k`: 1-50, default 10; `scope`: {SCOPES}; omitted = the whole brain. "
    f"As memory_search, {HIT_LINES}. {ERRORS} not_found (unknown session, or another brain's), "
    "validation_error, no_brain, forbidden."
)

REMEMBER: Final = (
    "Store a new markdown note in the brain, searchable as soon as the call returns. `content`: the "
    "markdown, 1-5,000,000 characters, stored as given (text/markdown, source ingest). `title` "
    f"(1-{MAX_TITLE} characters): default the front-matter title, else the first heading, else the "
    f"note's file name. `tags`: up to {MAX_TAGS}, each 1-{MAX_TAG} characters (repeats dropped), "
    "forwarded comma-joined as metadata.tags, so a tag holding commas is the tags it joins. `path` "
    "(1-1024 characters, relative; a leading / is "
    "dropped), e.g. memory/project/<project>/<topic>.md to be found with scope project; default "
    "memory/global/<slug of the title or first line>-<10-character id>.md. A note already at `path` is "
    "replaced (same id, new version). Titles, tags and paths refuse control characters. Returns the "
    "document record {id, brain_id, title, path, source, content_type, byte_size, checksum_sha256, "
    "metadata, commit_sha, created_at, updated_at, deleted_at}; the text is `Remembered <id> at "
    f"<path>`. {ERRORS} validation_error, no_brain, forbidden."
)

INGEST_FILE: Final = (
    "Ingest one file into the brain as the document ingest/<file name>: its text extracted, chunked, "
    "embedded and indexed. `path`: over HTTP (/mcp), a file below the server's ingest root "
    "(CAIRN_INGEST_ROOT, default <data dir>/ingest; a relative path resolves against it, leaving it by "
    ".. or symlinks is forbidden); over stdio (`cairn mcp`), any file the server's user can read; on "
    "AWS, the key of a presigned upload (uploads/…, from POST /v1/brains/{brainId}/documents/uploads). "
    "`as`: markdown, text, pdf, json or html (html is Cairn's addition); omitted, the extension decides "
    "(.md, .txt, .csv, .json, .jsonl, .html, .pdf…; .png, .jpg, .webp are kept as images, found by the "
    "text they carry and their name), else the bytes. PDF and HTML are stored as their extracted text. "
    "At most 25 MiB (file_too_large). Returns {status, document_id, path, hash, chunk_count, "
    "embedded_count, duration_ms, reused, job_id?}: `completed` once indexed; above 8 MiB, `queued` "
    "with a job_id finishing in the background (counts 0 until then; GET /v1/jobs/{job_id}). The same "
    "bytes at the same path answer reused: true. Sizes are defaults. "
    f"{ERRORS} not_found, forbidden, file_too_large, unsupported_content, validation_error, no_brain."
)

INGEST_URL: Final = (
    "Fetch an http(s) `url` on the server and ingest the response into the brain (Cairn always takes "
    "this server path; there is no client-side fallback). The fetch follows up to 5 redirects, stops "
    "after 20 seconds and refuses bodies over 5 MiB (defaults); a host resolving to a loopback, "
    "private, link-local, multicast or cloud-metadata address is refused on every hop unless the "
    "server allows private URLs. The kind comes from the Content-Type, else the URL's extension, else "
    "the bytes: markdown, text, JSON, HTML or PDF (the last two stored as extracted text), or an image. "
    "The document is ingest/<host>/<the URL's path> (index for a bare site; a query string adds a "
    "digest of itself to the last segment), so only the same URL fetched again updates it. Returns "
    '{path: "server", result: {status, '
    "document_id, path, hash, chunk_count, embedded_count, duration_ms, reused}} (reused: true when "
    f"those bytes were already stored there). {ERRORS} validation_error (not a valid URL), url_refused "
    "(not http(s), or a refused address), "
    "fetch_failed (an error status, a network failure or a timeout), payload_too_large, "
    "unsupported_content, no_brain, forbidden."
)

CREATE_BRAIN: Final = (
    "Create a brain: a separate set of notes with its own search index. `name`: display name, 1-128 "
    "characters. `slug`: 1-64 characters matching ^[a-z0-9][a-z0-9-]*$; omitted, it is made from the "
    "name (accents dropped, lowercased, other characters turned into -, `brain` if nothing is left) "
    "and suffixed -2, -3, … when taken; an explicit slug already taken is a conflict. `visibility` "
    "(default private): private = its owner (the caller) only; tenant = every principal of the "
    "caller's tenant; public = as tenant, and other tenants may read (never write) it. Needs the "
    "brains:admin scope. Returns the brain {id, slug, name, visibility, embedding_model, embedding_dim, "
    "metadata, created_at, updated_at}; the text is `Created brain <slug> (<id>, <visibility>)`. The "
    f"other tools' `brain` argument takes its id or slug. {ERRORS} validation_error, conflict, forbidden."
)

LIST_BRAINS: Final = (
    "List every brain the caller may read, oldest first: its tenant's `tenant` and `public` brains, its "
    "own private ones, and other tenants' public brains (readable, not writable); a key limited to "
    "some brains sees only those. No arguments; every brain in one answer (no paging). Returns {items: "
    "[{id, slug, name, visibility, embedding_model, embedding_dim, metadata, created_at, updated_at}]}; "
    "the text is `<n> brain(s)` then `- <slug> (<id>): <name>` per brain. Pass an id or slug as another "
    "tool's `brain`; when `brain` is omitted they use JBMCP_DEFAULT_BRAIN, else the oldest brain of the "
    "caller's own tenant it may use."
)

ASK: Final = (
    "Answer a question from what the brain holds, with citations. `query` (1-8192 characters) retrieves "
    "`top_k` passages (1-50, default 8, several may come from one document) in memory_search's order; "
    "the answer draws on them "
    "alone. Offline (the default) it quotes verbatim only sentences that answer, up to 5: the best "
    "sentence of each passage that answers (a sentence near the question by embedding, or a passage "
    "scored 0.5 or more) and is near the strongest; when none answers it is "
    "`No supporting memory was found for this question.`; with a language model configured, the model "
    "writes it. With _meta.progressToken on the call, each answer delta is sent as "
    "notifications/progress: `progress` counts deltas from 0 (no total), `message` is the delta's "
    "text, so the messages in order spell the answer; without a token nothing is sent. Returns {answer, "
    "citations: [{type: citation, chunk_id, document_id, brain, answer_start, answer_end, quote}], "
    "retrieved: [{chunk_id, document_id, brain, score, preview}]}: brain is the slug of the brain the "
    "passage came from (Cairn's addition), answer_start/answer_end the cited span's character "
    f"offsets in the answer, preview the passage's first {PREVIEW_CHARS} characters, and score on "
    "memory_search's calibrated 0-1 scale (the first passage's is its relevance). The text is the "
    "answer. A generation failure ends the call as an error whose "
    f"text is JSON {{code, message, retryable}}. {ERRORS} validation_error, no_brain, forbidden."
)

EXTRACT: Final = (
    "Hand over a conversation; the facts worth remembering are extracted from it in the background "
    "(the call returns once the messages are stored). `messages`: 1-500 of {role: system, user, "
    "assistant or tool; content: 1-1,000,000 characters}, oldest first. With `session_id` (an open "
    "session of this brain, from POST /v1/brains/{brainId}/sessions) they are appended to it, "
    "skip_extract on all but the last, whose append queues extraction of every message not yet "
    'extracted; returns {mode: "session", messages: [{id, session_id, role, content, created_at}]}. '
    "Without it a markdown transcript is stored at transcripts/<date>-<id>.md (source extract) and "
    'extraction queued; returns {mode: "transcript", document: <document record>}. `actor_id` '
    "(1-256 characters): whose memories these are; facts go to memory/agent/<actor>/ (a session's own "
    "actor_id wins), else memory/global/. Each fact becomes one small note with provenance metadata; a "
    "fact already stored is confirmed, not written twice. Offline a rule-based extractor keeps "
    "first-person statements, preferences, plans, dates, people and places, in the third person; with "
    f"CAIRN_GENERATOR=openai a model extracts. {ERRORS} not_found (unknown session), conflict (closed "
    "session), validation_error, no_brain, forbidden."
)

REFLECT: Final = (
    "Close a session and reflect on it, synchronously. `session_id`: a session of this brain. The "
    "session is closed first (ended_at set, no more appends; the close sticks even if reflection "
    "fails), then all its messages are read for an outcome (success, failure, partial or "
    "informational), whether an episode is worth recording, and retry feedback. If so, an episode note "
    "(source reflect) is written at memory/agent/<actor>/episodes/<date>-<session id>.md "
    "(memory/global/episodes/… without an actor); one path per session, so never two notes. Messages "
    "not yet extracted are queued for extraction. Returns {reflection_status: completed, no_result "
    "(nothing substantive said) or failed, reflection?: {outcome, should_record_episode, path, "
    "retry_feedback?}, reflection_attempted, ended_at, error?: {code, message, retryable}}. A session "
    "already reflected returns its stored reflection with reflection_attempted false; a failed one (the "
    "model erred, nothing written) runs again on the next call. The text is `Reflection <status> "
    f"outcome=… record_episode=… path=… ended_at=…`. {ERRORS} not_found (unknown session), "
    "validation_error, no_brain, forbidden."
)

CONSOLIDATE: Final = (
    "Queue a consolidation of the brain's memory and return at once with the job (Cairn runs it in the "
    "background). It covers the small notes (up to 4 KiB) under memory/, not `_` generated files, in "
    "four idempotent steps: merge near-duplicates within a folder (cosine at least 0.9 and one's words "
    "containing the other's or overlapping at least 0.7; the most confirmed, then most important, then "
    "oldest survives); promote facts confirmed by 2 or more sessions or transcripts to stable (sector "
    "semantic, importance at least 0.8); prune episodic notes older than 30 days, handed to no caller "
    "since and of importance below 0.5, into the folder's _archive-YYYY-MM.md; write _summary.md for "
    "each folder of 3 or more notes. Nothing is lost: merged and pruned notes are soft-deleted with "
    "replaced_by naming the note or archive that holds their words. Thresholds are defaults. Takes only "
    '`brain`. Returns {result: {job_id, kind: "consolidate", status, brain_id}}; follow it with GET '
    f"/v1/jobs/{{job_id}}. {ERRORS} no_brain, forbidden, validation_error."
)
