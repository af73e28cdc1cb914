"""Sessions: a conversation's messages, kept in order, and recall weighted by them.

A session belongs to one brain; asking for it through another brain is NotFound, as if it did not
exist. Messages are numbered by a counter on the session record, advanced in the same conditional
transaction that writes the message, so concurrent appenders never lose or duplicate one (a loser
re-reads and retries). Metadata (actor_id, skip_extract, ...) is stored with the record and is
never part of the read shapes the surfaces build.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from cairn.domain import json_input
from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Message, MessageRole, MetadataValue, Session, SessionStatus
from cairn.domain.text import check_actor_id, check_label, excerpt
from cairn.ports.clock import Clock
from cairn.services.repositories import SessionRepository, StoredSession
from cairn.services.search.service import SearchHit
from cairn.services.sessions.session_recall import SessionRecall

MAX_CONTENT = 1_000_000
MAX_NAME = 128
MAX_TITLE = 512
MAX_METADATA_KEYS = 64
MAX_METADATA_KEY = 128
MAX_METADATA_TEXT = 8192
MAX_METADATA_BYTES = 32_768
"""A bag's whole size as JSON: it lives in its session's or message's record, which on DynamoDB
holds at most 400 KB with everything else the record gains later (a reflection)."""
MAX_BATCH = 500
MAX_QUERY = 4096
MAX_TOP_K = 50
_RETRIES = 64

T = TypeVar("T")


@dataclass(frozen=True)
class NewMessage:
    role: str
    content: str
    name: str | None = None
    metadata: Mapping[str, MetadataValue] | None = None


AppendListener = Callable[[Brain, Session, int, list[Message]], None]
"""Told (brain, session, message count after the append, the new messages) after each append."""


class SessionService:
    def __init__(self, repo: SessionRepository, recall: SessionRecall, clock: Clock) -> None:
        self.repo = repo
        self.recaller = recall
        self.clock = clock
        self.listeners: list[AppendListener] = []

    def create(
        self,
        brain: Brain,
        title: str | None = None,
        actor_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Session:
        session = Session(
            id=new_id("ses"),
            brain_id=brain.id,
            title=_optional_text("title", title, MAX_TITLE),
            actor_id=check_actor_id(actor_id),
            metadata=_metadata(metadata),
            created_at=self.clock.now(),
        )
        self.repo.create(session)
        return session

    def get(self, brain: Brain, session_id: str) -> tuple[Session, list[Message]]:
        stored = self._stored(brain, session_id)
        return stored.session, list(self.repo.messages(stored.session.id))

    def append(
        self,
        brain: Brain,
        session_id: str,
        role: str,
        content: str,
        name: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Message:
        return self.append_many(brain, session_id, [NewMessage(role, content, name, metadata)])[0]

    def append_many(self, brain: Brain, session_id: str, items: Sequence[NewMessage]) -> list[Message]:
        """Append every message or none, numbered consecutively; Conflict when the session is closed."""
        if not 1 <= len(items) <= MAX_BATCH:
            raise InvalidInput(f"append 1..{MAX_BATCH} messages at a time")
        checked = [_checked(item) for item in items]

        def attempt() -> tuple[StoredSession, list[Message]]:
            stored = self._stored(brain, session_id)
            if stored.session.status is SessionStatus.closed:
                raise SessionClosed(
                    f"session {excerpt(session_id)} is closed; messages cannot be appended to it"
                )
            now = self.clock.now()
            messages = [
                Message(
                    id=new_id("msg"), session_id=stored.session.id, brain_id=brain.id, created_at=now, **c
                )
                for c in checked
            ]
            self.repo.append(stored, messages)
            return stored, messages

        stored, messages = _retry(attempt)
        for listener in self.listeners:
            listener(brain, stored.session, stored.message_count + len(messages), messages)
        return messages

    def session(self, brain: Brain, session_id: str) -> Session:
        return self._stored(brain, session_id).session

    def messages(self, brain: Brain, session_id: str, after: int = 0) -> list[Message]:
        """The session's messages after the first `after` of them (every one from 0), oldest first."""
        return list(self.repo.messages(self._stored(brain, session_id).session.id, after))

    def update(self, brain: Brain, session_id: str, change: Callable[[Session], Session | None]) -> Session:
        """Apply `change` to the session record without losing a concurrent update (retried on
        a lost race); `change` returns None to leave it as it is."""

        def attempt() -> Session:
            stored = self._stored(brain, session_id)
            changed = change(stored.session)
            if changed is None:
                return stored.session
            self.repo.save(stored, changed)
            return changed

        return _retry(attempt)

    def close(self, brain: Brain, session_id: str) -> Session:
        """Mark the session closed with `ended_at`; closing a closed session returns it unchanged."""

        def closing(session: Session) -> Session | None:
            if session.status is SessionStatus.closed:
                return None
            return session.model_copy(update={"status": SessionStatus.closed, "ended_at": self.clock.now()})

        return self.update(brain, session_id, closing)

    def recent(self, brain: Brain, session_id: str, limit: int) -> list[Message]:
        """The newest `limit` messages, newest first."""
        stored = self._stored(brain, session_id)
        return self.repo.recent(stored.session.id, limit) if limit > 0 else []

    def recall(
        self, brain: Brain, session_id: str, query: str, top_k: int = 10, scope: str | None = None
    ) -> list[SearchHit]:
        """Search for `query` weighted by the session's recent messages (session_recall.py)."""
        if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY:
            raise InvalidInput(f"query must be 1..{MAX_QUERY} characters")
        if not 1 <= top_k <= MAX_TOP_K:
            raise InvalidInput(f"top_k must be 1..{MAX_TOP_K}")
        stored = self._stored(brain, session_id)
        window = self.recaller.tuning.window
        context = self.repo.recent(stored.session.id, window) if window > 0 else []
        return self.recaller.recall(brain, stored.session, query, context, top_k=top_k, scope=scope)

    def _stored(self, brain: Brain, session_id: str) -> StoredSession:
        stored = self.repo.get(session_id) if _plausible_id(session_id) else None
        if stored is None or stored.session.brain_id != brain.id:
            raise NotFound(f"no session {excerpt(session_id)} in brain {brain.slug!r}")
        return stored


class SessionClosed(Conflict):
    """Appending to a closed session (distinct from a lost optimistic-concurrency race)."""


def _retry(attempt: Callable[[], T]) -> T:
    """Run `attempt` until it does not lose a write race; jittered backoff between tries."""
    for n in range(_RETRIES):
        try:
            return attempt()
        except SessionClosed:
            raise
        except Conflict:
            time.sleep(random.uniform(0, 0.002 * min(n + 1, 10)))
    return attempt()


def _plausible_id(session_id: str) -> bool:
    return isinstance(session_id, str) and 0 < len(session_id) <= 128 and session_id.isprintable()


def _checked(item: NewMessage) -> dict[str, Any]:
    try:
        role = MessageRole(item.role)
    except ValueError:
        raise InvalidInput("role must be one of system, user, assistant, tool") from None
    if not isinstance(item.content, str) or not 1 <= len(item.content) <= MAX_CONTENT:
        raise InvalidInput(f"content must be 1..{MAX_CONTENT} characters")
    if item.name is not None and role is not MessageRole.tool:
        raise InvalidInput("name is only allowed on messages with role 'tool'")
    name = _optional_text("name", item.name, MAX_NAME)
    return {"role": role, "content": item.content, "name": name, "metadata": _metadata(item.metadata)}


def _optional_text(field: str, value: str | None, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not 1 <= len(value) <= limit:
        raise InvalidInput(f"{field} must be 1..{limit} characters")
    return check_label(field, value)


def _metadata(value: Mapping[str, Any] | None) -> dict[str, MetadataValue]:
    """Flat metadata: at most 64 keys, scalar values (strings up to 8 KiB)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or len(value) > MAX_METADATA_KEYS:
        raise InvalidInput(f"metadata must be an object of at most {MAX_METADATA_KEYS} keys")
    json_input.check(dict(value), "metadata")  # a lone surrogate, in a key or a value
    out: dict[str, MetadataValue] = {}
    for key, item in value.items():
        if not isinstance(key, str) or not 1 <= len(key) <= MAX_METADATA_KEY:
            raise InvalidInput(f"metadata keys must be 1..{MAX_METADATA_KEY} characters")
        if isinstance(item, str) and len(item) > MAX_METADATA_TEXT:
            raise InvalidInput(f"metadata.{key} exceeds {MAX_METADATA_TEXT} characters")
        if item is not None and not isinstance(item, str | int | float | bool):
            raise InvalidInput(f"metadata.{key} must be a string, number, boolean or null")
        out[key] = item
    size = len(json.dumps(out, ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:
        raise InvalidInput(f"metadata is {size} bytes as JSON; at most {MAX_METADATA_BYTES}")
    return out
