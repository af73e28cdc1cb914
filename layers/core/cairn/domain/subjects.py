"""The kinds of subject an erasure removes (services/erasure/subjects.py says what each selects).
Here, importing nothing, so the `cairn erase` command's arguments can name them."""

from __future__ import annotations

from enum import StrEnum


class SubjectKind(StrEnum):
    thoughtmcp_user = "thoughtmcp_user"
    source_agent = "source_agent"
    agent_scope = "agent_scope"
    session_actor = "session_actor"
    any = "any"
