"""What each ThoughtMCP tool tells an agent's model about itself: the seed's account of the tool
(behaviour, parameters, defaults, formulas), in Cairn's words and true of what Cairn does."""

from __future__ import annotations

from typing import Final

REMEMBER: Final = (
    "Store a new memory with automatic embedding generation and waypoint graph connections. "
    "The memory belongs to userId (memories are isolated per user) and sessionId, in one primarySector: "
    "episodic (events, experiences), semantic (facts, knowledge), procedural (how-tos, steps), emotional "
    "(feelings), reflective (insights, lessons). Content must be 10 to 100,000 characters. It is embedded "
    "five times, once per sector (embeddingsGenerated: 5), and linked both ways to its most similar "
    "existing memory of the user when their waypoint weight reaches 0.7 (linksCreated 0 or 2). "
    "metadata (optional): keywords (extracted from the content when omitted), tags, category, context, "
    "importance 0-1 (default 0.5). Salience starts at 0.5 + 0.1 per urgency word (important, urgent, "
    "critical, ...), averaged with importance when given; strength starts at 1.0. "
    "Returns {memoryId, embeddingsGenerated, linksCreated, salience, strength}."
)
RECALL: Final = (
    "Retrieve a user's memories using composite scoring with vector similarity, metadata filtering, and "
    "pagination. With text: total = 0.6*similarity + 0.2*salience + 0.1*recency + 0.1*linkWeight; without "
    "text: 0.4*salience + 0.3*recency + 0.3*linkWeight (recency = 1 - age/365 days; linkWeight = mean "
    "weight of the memory's links). similarity is a calibrated relevance in 0..1 (0.5 = on the question's "
    "topic, as on ThoughtMCP's own embedder; about 0.75 and up = a good match), the "
    "best over the sector embeddings searched: all five by default, or those named in sectors. "
    "minSimilarity (default 0.5) keeps the related ones; when none reaches it, every memory passes with its "
    "own (low) similarity, so a similarity under minSimilarity means a weak match. Filters: primarySector, "
    "minStrength (default 0.01, which hides soft-deleted memories; 0 shows them), minSalience, dateRange "
    "{start, end} on creation time (ISO 8601), metadata {keywords, tags (any of them), category}. limit "
    "(default 10, max 100), offset (default 0). Every memory returned is reinforced (strength +0.3). "
    "Returns {memories[{id, content, createdAt, lastAccessed, strength, salience, primarySector, "
    "metadata, score (the total), scoreComponents{total, similarity, salience, recency, linkWeight}, "
    "brain (its brain's slug)}], "
    "totalCount, scores{id: total}, rankingMethod: similarity | salience}."
)
UPDATE_MEMORY: Final = (
    "Update an existing memory with selective field updates: only the fields given change. memoryId and "
    "userId are required (the memory must belong to the user). New content (non-empty) regenerates all "
    "five sector embeddings and re-links waypoint connections (embeddingsRegenerated: true; "
    "connectionsUpdated counts links removed and made). strength and salience take 0-1; metadata "
    "replaces the keywords, tags, category, context or importance it names. At least one field to "
    "update is required. Returns {memoryId, embeddingsRegenerated, connectionsUpdated, strength, "
    "salience}."
)
FORGET: Final = (
    "Delete a memory with cascade deletion options. soft (default false): true sets the memory's strength "
    "to 0 and keeps all its data (hidden from recall and search unless minStrength is 0); false removes "
    "the memory and cascades to its embeddings, waypoint connections and metadata. The memory must "
    "belong to userId. Returns {memoryId, deletionType: soft | hard, message}."
)
SEARCH: Final = (
    "Advanced memory search combining full-text search, vector similarity, and metadata filtering. With "
    'text, a full-text search ranked by BM25 with boolean operators: terms, "quoted phrases", AND, OR, '
    "NOT (upper case; & | ! and a leading - also work), parentheses; adjacent terms are ANDed; precedence "
    "NOT > AND > OR; a query that only excludes, a dangling operator or unbalanced parentheses is refused "
    "with the position of the problem. Each result has a highlight with <b>...</b> marks and the "
    "matchedTerms (searchType: full-text); every result names its brain's slug (brain). "
    "Without text it ranks by salience, recency and links like recall "
    "(searchType: vector-metadata). userId is required; the filters of recall apply (minStrength, "
    "minSalience, primarySector, dateRange, metadata); limit default 10 (max 100), offset default 0."
)
BATCH_REMEMBER: Final = (
    "Store several memories of one user and session in one call: memories is a list of {content, "
    "primarySector, metadata?}, each checked and stored on its own, so one bad item is reported in "
    "failures[{index, error}] while the others are stored. Returns {successCount, failureCount, "
    "created[{memoryId, content, ...}], failures, processingTime}."
)
BATCH_RECALL: Final = (
    "Retrieve memories of a user by their IDs, in the order asked, each memory once however often its "
    "ID is given. includeDeleted (default false) also returns soft-deleted memories. Returns {memories, "
    "foundCount (how many memories), notFound (each ID given that is not found or not the user's), "
    "processingTime}."
)
BATCH_FORGET: Final = (
    "Delete several memories by their IDs (at least one). soft (default false): true sets strength to 0 "
    "and keeps the data, false removes each memory with its embeddings and links. Each memory must belong "
    "to a user the caller may act for. Returns {successCount, failureCount, deletionType, deleted, "
    "failures[{memoryId, error}], processingTime}."
)
THINK: Final = (
    "Perform reasoning with specified mode (analytical, creative, critical, synthetic, parallel). "
    "analytical: logical, breaks the problem into parts and weighs them against goals and constraints; "
    "creative: reframes it and proposes alternatives; critical: questions assumptions and names risks; "
    "synthetic: combines the parts into a plan; parallel: all four streams at once, merged into insights "
    "with their sources, prioritized recommendations and the conflicts between streams. context "
    "(optional): background, constraints[], goals[]. userId (optional) adds that user's most relevant "
    "memories to the context and lists them in memoriesUsed. Returns {conclusion, reasoning[], insights, "
    "confidence, processingTime, status} (parallel: conclusion, insights, recommendations, conflicts, "
    "confidence, quality). Without a configured language model the reasoning is rule-based and says so "
    '(method: "rule-based", model: null).'
)
ANALYZE: Final = (
    "Analyze problem using systematic thinking framework with dynamic framework selection: "
    "scientific-method (hypotheses, empirical questions), design-thinking (user-centred problems), "
    "systems-thinking (interconnected systems), critical-thinking (evaluating arguments), "
    "creative-problem-solving (novel solutions), root-cause-analysis (failures, debugging), "
    "first-principles (fundamental understanding), scenario-planning (uncertain futures). The framework is "
    "chosen from the problem's features unless preferredFramework overrides it; its steps are run on the "
    "problem. context (optional): background, constraints, goals; userId (optional) adds relevant "
    "memories. Returns {framework{id, name, description}, selection{confidence, reason, isHybrid}, "
    "result{conclusion, steps, insights, confidence, processingTime}, alternatives[{framework, reason}]}."
)
PONDER: Final = (
    "Execute parallel reasoning streams with coordination and synthesis: the analytical, creative, "
    "critical and synthetic streams run concurrently under one deadline, timeout in milliseconds (1000 to "
    "60000, default 30000); a stream that has not finished by then is left out and reported. The results "
    "are merged with insight attribution (each insight lists its source streams) and conflicts between "
    "streams preserved. context (optional): background, constraints, goals; userId (optional) adds "
    "relevant memories. Returns {conclusion, insights[{content, sources, importance, confidence}], "
    "recommendations[{description, sources, priority, confidence, rationale}], conflicts[{id, type, "
    "description, severity, sourceStreams}], confidence, quality}."
)
BREAKDOWN: Final = (
    "Decompose problem into hierarchical sub-problems with dependency mapping. The problem is split by "
    "its own sentences and clauses (then, before, after, requires ... give the order); a problem stated in "
    "one clause is split into the stages of the kind of work its verb names (build: design, then "
    "implement and set up infrastructure; reduce or improve: measure, find the limit, change, verify; "
    "fix: reproduce, root cause, fix, verify; decide: criteria, options, weigh, decide). context goals and "
    "constraints become sub-problems. maxDepth 1 to 5 (default 3). Returns {problem, subProblems[{id, name, "
    "description, details, depth, parent, domain}], dependencies[{from, to, type: hierarchical | "
    "sequential | prerequisite, description}], graph{nodes, edges}, executionOrder (a topological sort), "
    "totalSubProblems, maxDepth}."
)
ASSESS_CONFIDENCE: Final = (
    "Assess confidence in reasoning with multi-dimensional analysis: evidence quality, reasoning "
    "coherence, completeness, uncertainty level and bias freedom, each 0-1, combined as overallConfidence "
    "= 0.3*evidence + 0.3*coherence + 0.25*completeness + 0.15*(1 - uncertainty). evidence (optional) is "
    "the supporting evidence; without it, evidence statements are extracted from the reasoning "
    "(extractedEvidence). context (optional). Returns {overallConfidence, dimensions{evidenceQuality, "
    "reasoningCoherence, completeness, uncertaintyLevel, biasFreedom}, interpretation, warnings, "
    "recommendations, uncertaintyType, factors} with metadata {timestamp, processingTime, componentsUsed}."
)
DETECT_BIAS: Final = (
    "Detect cognitive biases in reasoning with real-time monitoring. Identifies 8 bias types: "
    "confirmation, anchoring, availability, recency, representativeness, framing, sunk_cost, attribution; "
    "for each bias found: severity and confidence (0-1), the words that show it (evidence), where it is "
    "(location: the sentence's index and text), an explanation, and a correction with techniques and "
    "challenge questions. context (optional) describes the situation; monitorContinuously is accepted "
    "(monitoringActive is always false). Returns {biases, detectionTime (seconds), monitoringActive}."
)
DETECT_EMOTION: Final = (
    "Detect emotions using the Circumplex model and discrete classification: valence (-1 negative to +1 "
    "positive), arousal (0 calm to 1 activated) and dominance (-1 submissive to +1 dominant), and, unless "
    "includeDiscrete is false (default true), which of 11 discrete emotions the text expresses (joy, "
    "sadness, anger, fear, disgust, surprise, pride, shame, guilt, gratitude, awe) with a score and an "
    "intensity (low, moderate, high). context (optional). Returns {circumplex{valence, arousal, dominance, "
    "confidence}, discrete{primary, emotions, confidence} | null, detectionTime}."
)
EVALUATE: Final = (
    "Analyze reasoning quality with comprehensive assessment: coherence, completeness, logical validity "
    "and evidence support (0-1 each), with the strengths and weaknesses found and recommendations to "
    "improve it. Optionally includes a confidence assessment (includeConfidence, default true, as "
    "assess_confidence), bias detection (includeBias, default true, as detect_bias) and emotion analysis "
    "(includeEmotion, default false, as detect_emotion's circumplex). context (optional). Returns {quality, "
    "strengths, weaknesses, recommendations, confidence?, biases?, emotion?}."
)
