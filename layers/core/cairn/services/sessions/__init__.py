"""Conversation sessions (service.py) and recall weighted by a session's recent messages
(session_recall.py)."""
