"""Cairn as the MCP clients' authorization server in front of a Cognito user pool: its own
discovery documents (metadata.py) and dynamic client registration (registration.py)."""
