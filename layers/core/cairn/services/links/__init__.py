"""Typed, numbered links between documents (repository.py) and the graph read over them
(graph.py: backlinks, traversal)."""
