"""Search over a brain's chunks (service.py: hybrid full text + vectors, fused), what was handed back
to callers (access.py), and grounded answers (ask.py)."""
