"""Whom an erasure removes: a subject is a kind of identity a surface records and its value.

| kind              | what it selects                                                          |
|-------------------|--------------------------------------------------------------------------|
| `thoughtmcp_user` | ThoughtMCP memories of that userId (their rows and waypoint links too)   |
| `source_agent`    | zengram memories stored by that agent (`source_agent`)                   |
| `agent_scope`     | documents under the Jeffs Brain agent scope `memory/agent/<agent>/`      |
| `session_actor`   | sessions of that actor with their messages, and what was drawn from them |
|                   | (transcripts, extracted facts and episodes name the actor in `actor_id`; |
|                   | the summary and archives consolidation writes in the actor's folder)     |
| `any`             | all of the above under that name at once: one person or agent, whichever |
|                   | surface recorded it                                                      |

Selection reads stored records as they are (not decoded), so it runs over a whole brain cheaply.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cairn.domain.errors import CairnError, InvalidInput
from cairn.domain.paths import AGENT_PREFIX
from cairn.domain.subjects import SubjectKind
from cairn.ports.jobs import JobHolds
from cairn.ports.records import Item
from cairn.ports.store_secret import StoreSecret
from cairn.services.keyed_digests import derived_key, keyed_digest
from cairn.services.memory.fact_memory import FACT_KIND, namespace, namespaces
from cairn.services.repositories import SESSIONS_PREFIX

MAX_VALUE = 256
UNNAMED = "[erased]"  # as the audit's redacted fields say
_RECEIPTS = b"the subjects of erasure receipts"
_DRAWN_FROM_ACTORS = (FACT_KIND, "episode")  # filed in their actor's folder (fact_memory.namespace)


@dataclass(frozen=True)
class Subject:
    kind: SubjectKind
    value: str

    @classmethod
    def of(cls, kind: str, value: str) -> Subject:
        """A subject from a caller's words; InvalidInput for an unknown kind or an empty value."""
        try:
            chosen = SubjectKind(kind)
        except ValueError:
            known = ", ".join(k.value for k in SubjectKind)
            raise InvalidInput(f"kind must be one of {known}") from None
        if not isinstance(value, str) or not value.strip() or len(value) > MAX_VALUE:
            raise InvalidInput(f"subject must be 1..{MAX_VALUE} characters")
        if chosen is SubjectKind.agent_scope and ("/" in value or value in (".", "..")):
            raise InvalidInput("an agent scope is one path segment (the agent's slug)")
        return cls(chosen, value)

    def digest(self, secret: StoreSecret) -> str:
        """What an erasure's receipt keeps of the subject once it is done: never the value, and a
        digest keyed with the store's secret (services/keyed_digests.py), so a reader of the store
        without it cannot test likely names against a receipt (earlier releases' receipts keep an
        unkeyed one). NoSecret when the secret cannot be had."""
        return keyed_digest(derived_key(secret, _RECEIPTS), f"{self.kind}\x00{self.value}")[:16]

    @property
    def prefix(self) -> str:
        """The document paths every selected document starts with ("" when any path may be)."""
        return (self.scope or "") if self.kind is SubjectKind.agent_scope else ""

    @property
    def scope(self) -> str | None:
        """The agent scope `memory/agent/<value>/` the subject covers; None when it covers none (or,
        for `any`, names no single scope: `alice/notes` is not Alice's scope)."""
        if not self.covers(SubjectKind.agent_scope) or "/" in self.value or self.value in (".", ".."):
            return None
        return f"{AGENT_PREFIX}{self.value}/"

    def covers(self, kind: SubjectKind) -> bool:
        return self.kind in (kind, SubjectKind.any)

    def selects(self, record: dict[str, Any]) -> bool:
        """Whether a stored document record (raw data of the record store) is the subject's."""
        memory = record.get("memory") if isinstance(record.get("memory"), dict) else {}
        metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        assert isinstance(memory, dict) and isinstance(metadata, dict)
        path = str(record.get("path", ""))
        return (
            (self.covers(SubjectKind.thoughtmcp_user) and memory.get("user_id") == self.value)
            or (self.covers(SubjectKind.source_agent) and memory.get("source_agent") == self.value)
            or (self.scope is not None and path.startswith(self.scope) and self._in_own_folder(metadata))
            or (self.covers(SubjectKind.session_actor) and metadata.get("actor_id") == self.value)
            or (self.covers(SubjectKind.session_actor) and self._derived_in_actor_folder(path))
        )

    def _in_own_folder(self, metadata: dict[str, Any]) -> bool:
        """Whether a document in the agent scope is the scope's own: an extracted fact or an
        episode is only when the scope is its actor's folder (an earlier release filed the facts
        of `田中` and of an agent named `agent` in one folder; erasing the agent's scope leaves
        田中's)."""
        actor = metadata.get("actor_id")
        if metadata.get("kind") not in _DRAWN_FROM_ACTORS or not isinstance(actor, str) or not actor:
            return True
        return namespace(actor) == self.scope

    def _derived_in_actor_folder(self, path: str) -> bool:
        """Consolidation's summary and monthly archives of the actor's fact folders (its own and
        its legacy one): they quote the facts, and name no actor."""
        for folder in namespaces(self.value):
            name = path[len(folder) :] if path.startswith(folder) else "/"
            if name == "_summary.md" or (
                name.startswith("_archive-") and name.endswith(".md") and "/" not in name
            ):
                return True
        return False

    def selects_session(self, session: dict[str, Any]) -> bool:
        return self.covers(SubjectKind.session_actor) and session.get("actor_id") == self.value

    def selects_message(self, message: dict[str, Any]) -> bool:
        metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        assert isinstance(metadata, dict)
        return self.covers(SubjectKind.session_actor) and metadata.get("actor_id") == self.value


def mentioning(value: str, within: set[str]) -> JobHolds:
    """Whether what a job holds names the subject (a text that is its value) or holds one of the
    ids and paths of what went (a source id such as `<document id>#3` holds its document's)."""

    def holds(node: Any) -> bool:
        if isinstance(node, dict):
            return any(holds(k) or holds(v) for k, v in node.items())
        if isinstance(node, list):
            return any(holds(v) for v in node)
        return isinstance(node, str) and (node == value or any(w in node for w in within))

    return holds


def sessions_of(sessions: list[list[Item]], subject: Subject) -> Iterator[tuple[str, bool, list[Item]]]:
    """(session id, whether the whole session goes, the items that go) of the subject's among a
    brain's sessions: an actor's own sessions whole, and its messages in the others."""
    for items in sessions:
        head = next(i for i in items if i.sk == "session")
        session_id = head.pk.removeprefix(SESSIONS_PREFIX)
        if subject.selects_session(head.data["session"]):
            yield session_id, True, items
            continue
        mine = [i for i in items if i.sk.startswith("msg#") and subject.selects_message(i.data)]
        if mine:
            yield session_id, False, mine


def unnamed(error: CairnError, value: str | None) -> CairnError:
    """`error`, what it says made again without the subject's `value` (UNNAMED where it stands as a
    word of its own, case aside): an erasure's error may quote a key that names a path of the
    subject's (a damaged record's), and it is answered, logged and kept on the receipt."""
    if value:
        bounded = rf"(?<![^\W_]){re.escape(value)}(?![^\W_])"
        error.message = re.sub(bounded, UNNAMED, error.message, flags=re.IGNORECASE)
        error.args = (error.message,)
    return error
