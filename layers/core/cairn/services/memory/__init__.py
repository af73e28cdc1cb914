"""Typed memories and what keeps them: MemoryService (memories.py: supersede, dedupe, validity,
ranking), entities, fact extraction from sessions, reflection, consolidation and its schedule,
and asking the Generator for JSON (model_calls). zengram and ThoughtMCP build on it."""
