"""Erasing a subject (a ThoughtMCP user, a zengram agent, an agent scope, a session's actor) from
everything Cairn holds, and deleting a brain: subjects.py (who), log.py (the records and receipts),
documents.py (a document and what was drawn from it), service.py (asking, running, resuming),
scrub_failures.py (a scrub of the stores' files failing: tried again, or stopping the erasure),
interrupted.py (the sweep's finisher of an erase a process stopped half-way)."""
