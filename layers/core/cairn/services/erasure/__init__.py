"""Erasing a subject (a ThoughtMCP user, a zengram agent, an agent scope, a session's actor) from
everything Cairn holds, and deleting a brain: subjects.py (who), log.py (the records and receipts),
documents.py (a document and what was drawn from it), service.py (asking, running, resuming),
interrupted.py (the sweep's finisher of an erase a process stopped half-way)."""
