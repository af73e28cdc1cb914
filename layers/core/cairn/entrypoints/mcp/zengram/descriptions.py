"""What tools/list says each `brain_*` tool does: seed 001's account of the tool (its behaviour,
parameters, defaults and formulas) in Cairn's words, true to what Cairn does where they differ
(docs/ZENGRAM.md)."""

from __future__ import annotations

STORE = (
    "Save one memory to the shared brain that every agent reads. Pick its type: event (something "
    "that happened; append-only; one of medium or low importance that nobody reads for 30 days "
    "expires), fact (lasting knowledge; give it a key, and a later fact with the same key "
    "supersedes it), decision (a choice and why; append-only, never expires) or status (the "
    "current state of a system or workflow; give it a subject, and a later status of that "
    "subject supersedes it). Storing the same text again for the same client and type returns "
    "the memory already there instead of a copy; entities are extracted and credentials redacted. "
    'Required: type, content. source_agent names the writer ("claude-code" when left out); '
    'client_id a client slug ("global" by default); category semantic, episodic (default) or '
    "procedural; importance critical, high, medium (default) or low; knowledge_category brand, "
    "strategy, meeting, content, technical, relationship or general (default); status_value a "
    "status's value; valid_from and valid_to (ISO 8601) when a fact became and stopped being true."
)

SEARCH = (
    "Search memories by meaning and by exact words at once: a semantic (vector) search and a "
    "keyword (BM25) search run side by side and their results are fused into one ranking. A "
    "result's score is its relevance from 0 to 1 (0.5 marks a good match); results are ordered by "
    "effective_score = score x (0.85 + 0.15 x importance weight) x (0.9 + 0.1 x confidence), with "
    "importance weights critical 1.0, high 0.85, medium 0.7, low 0.5, and facts and statuses "
    "losing 2% confidence a day since last read. Required: query, in natural language. Filters: "
    "type, source_agent, client_id, knowledge_category; include_superseded=true adds superseded "
    "memories; at_time (ISO 8601) finds what was true at that moment. limit caps the results "
    "(default 10, max 100). format: compact (default; short content, fewer tokens), full (the "
    "whole memory and the retrieval paths that found it) or index (one line each). The default "
    "tool for recalling what is stored."
)

BRIEFING = (
    "Catch up on what the agents recorded since a moment: the memories created at or after "
    "`since`, grouped into events, updated facts, status changes and decisions, most important "
    "first, with counts, the active agents, the clients and the entities mentioned. The requesting "
    'agent\'s own entries are left out: agent names it and defaults to "claude-code"; '
    'include="all" keeps them. Required: since (ISO 8601). format: compact (default; '
    "low-importance events left out), summary (headlines only) or full (every entry). limit caps "
    "the memories read (default 100, max 500). Call it when a session starts."
)

QUERY = (
    "Exact lookup in the structured store, with no semantic matching (unlike brain_search), of "
    "current memories. Required: type, one of events (decisions included), facts or statuses. "
    "Optional filters: source_agent, category, client_id, since (ISO 8601; events), key (facts "
    "whose key contains it, any case) and subject (statuses whose subject contains it). Newest "
    "first, at most 50. Use it when you know the key or subject, or to list every current status."
)

STATS = (
    "Health of the memory store; no parameters. Totals of memories, active, superseded and "
    "consolidated ones, counts by type, how many recent facts decayed below half confidence "
    "(facts and statuses lose 2% a day since last read), entity counts and the retrieval setup."
)

CONSOLIDATE = (
    "Start or follow the consolidation engine. A run takes on every memory stored since the last "
    "completed run (memories_processed counts them, groups_processed their clients) and expires "
    "stale events. action: run (default) starts one and answers "
    '{"status": "started", "job_id": ...}; with sync=true (default false) it waits and answers '
    "the run's summary instead. status tells whether a run is going and when the last began. job "
    "polls the run of job_id. Use it after many stores, or when the schedule has not run lately."
)

ENTITIES = (
    "Explore the entity graph drawn from stored memories. Required: action, one of list (entities "
    "by mention count; type keeps one of client, person, system, service, domain, technology, "
    "workflow, agent; limit default 50, max 100), get (one entity by its name or an alias, any "
    "case), memories (the memories that mention it; limit default 20) or stats (totals by type "
    'and the most mentioned). name is required for get and memories and may contain "/".'
)

DELETE = (
    "Soft-delete one memory by its id: it leaves searches, queries and exports of active "
    "memories, and is kept with when and why it was deleted (a briefing lists every memory "
    "stored in its period, deleted ones too). Required: memory_id. reason: why, kept for the "
    "audit. A memory already inactive is left as it is. For wrong or outdated memories; text "
    "that must go for good is erased by an admin (erasure of its source agent)."
)

UPDATE = (
    "Change a memory in place, without a new version. Required: memory_id and at least one of "
    "content (new text: embedded, indexed and its entities extracted again), importance "
    "(critical, high, medium, low), knowledge_category, metadata (an object that replaces the "
    "old one). For corrections and for raising or lowering importance; a fact that changes over "
    "time is better stored again with brain_store under its key, which supersedes it cleanly."
)

EXPORT = (
    "Export memories as JSON, newest first: each row the whole stored memory with its entities. "
    "Filters: client_id, type (event, fact, decision, status), since (ISO 8601; created then or "
    "later). limit caps the rows (default 500). The answer also gives total, has_more and the "
    "filters applied. For backups, moving to another instance, or audits."
)

IMPORT = (
    "Restore memories from a backup. Required: data, an array of memory objects as brain_export "
    "writes them, at most 500 a call. Each is stored as brain_store stores one: a record whose "
    "text a current memory of the same client and type already holds is skipped (deduplicated "
    "by content hash), and each is embedded again with the current model. A record keeps its id, "
    "but one whose id names a memory still present is skipped, never overwritten. Answers "
    "{imported, skipped, errors}."
)

REFLECT = (
    "Synthesis over what the brain holds about a topic: the memories relevant to it are read for "
    "a summary, recurring patterns, a timeline, contradictions and knowledge gaps, each entry "
    "citing its memories as [mem:<id>]. A configured language model writes it; without one the "
    "summary quotes the memories. When nothing relevant is stored it says so "
    "(memories_analyzed 0). Required: topic, a subject or question. client_id keeps one client's "
    "memories. limit caps the memories read (default 20, max 50). For 'what do we know about X?', "
    "'what patterns are there?' or 'what is missing?'."
)

RESEARCH = (
    "Multi-hop research for hard questions one search cannot answer. A bounded loop retrieves "
    "memories, judges whether what it gathered answers the whole question, searches for what is "
    "missing if not, and repeats; then it writes an answer whose claims cite [mem:<id>] "
    "(citations of memories it was not shown are dropped). Answers answer, key_findings, "
    "cited_memory_ids, unresolved, partial (true when the rounds ran out first), iterations and "
    "query_trace. Required: topic, the whole question phrased as a question. client_id keeps one "
    "client's memories. max_iterations: retrieval rounds before answering (1-4, default 2). Heavy "
    "(several model calls) and off unless the server enables it; for routine recall use "
    "brain_search, for a one-pass synthesis brain_reflect."
)
