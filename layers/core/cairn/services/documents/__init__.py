"""Documents: the store protocol's writes and reads (service.py, DocumentService), the index kept in
step with them (indexing, index_intents, index_sync, index_sweeper, index_repair, rebuilding),
sibling context, listings, per-path locks, the ChunkIndex read through the access rule
(visible_chunks), and answers about many read around a damaged document (unreadable)."""
