"""Background work seen from services: job status through the access rule (visible_jobs) and the
periodic loop behind the index sweeper and the consolidation schedule (periodic)."""
