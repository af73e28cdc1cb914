"""Extracted facts as memory documents: one small note per fact, deduplicated, with provenance.

A fact lives at a path derived from its normalised text inside the speaker's namespace
(`memory/agent/<actor>/` when an actor is known, else `memory/global/`), so extracting the same
fact again lands on the same document. Before creating a note, the namespace is searched: a
fact that says the same thing in other words (same_fact) is *confirmed* instead — its provenance
gains the new origin (session or transcript) and source ids, and `confirmations` counts distinct
origins (consolidation promotes facts confirmed in several sessions) — and a note someone wrote
that already contains every word of the fact makes it `known` (nothing is written). Provenance
lives in flat metadata so every surface can show it, and is the key that makes an extraction job
run twice store nothing twice: the same origin and sources leave a note as it is, or deleted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from cairn.domain.models import Brain, Document, DocumentSource, MemoryFacet, MetadataValue
from cairn.domain.paths import AGENT_PREFIX, GLOBAL_PREFIX, named_segment
from cairn.domain.stopwords import FACT_MATCH as _STOP
from cairn.ports.facts import FactDraft
from cairn.services.documents.inputs import DocumentInput, keep_info
from cairn.services.documents.service import DocumentService
from cairn.services.search.service import SearchService

FACT_KIND = "fact"
MAX_ORIGINS = 32
MAX_SOURCE_IDS = 64
DEDUPE_CANDIDATES = 5

VARIANTS_HEADING = "Also recorded as:"

_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Provenance:
    origin: str  # the session id or transcript document id the fact came from
    source_ids: tuple[str, ...]  # message ids (session) or turn ids `<doc_id>#<n>` (transcript)
    extracted_by: str
    actor_id: str | None = None


@dataclass(frozen=True)
class StoredFact:
    document: Document
    outcome: Literal["created", "confirmed", "unchanged", "known"]
    """`known`: a note that is not an extracted fact (one the user wrote) already says it all."""


def fact_tokens(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two token sets."""
    return len(a & b) / len(a | b) if a and b else 0.0


def merged_body(text: str, variants: Sequence[str]) -> str:
    """The survivor's text, plus each variant that says something it does not."""
    have = fact_tokens(text)
    extra = []
    for variant in variants:
        line = " ".join(variant.split())
        if line and not fact_tokens(line) <= have and line not in text:
            extra.append(line)
            have |= fact_tokens(line)
    if not extra:
        return text
    base = text.rstrip("\n")
    if VARIANTS_HEADING not in base:
        base += f"\n\n{VARIANTS_HEADING}"
    return base + "".join(f"\n- {line}" for line in extra) + "\n"


def same_fact(new: frozenset[str], old: frozenset[str], min_overlap: float) -> bool:
    """Two wordings of one fact: one's words contain the other's, or they overlap that much.
    Plain overlap alone is not enough for short facts: "I have a dog" and "I have a cat" share
    two thirds of their words."""
    if not new or not old:
        return False
    return new <= old or old <= new or overlap(new, old) >= min_overlap


def namespace(actor_id: str | None) -> str:
    """The actor's fact folder. A plain-ASCII name keeps its slug (`Alice` → `alice/`); a name the
    slug loses letters of (`José` → `jos`, `田中` → none, so `agent`) has a digest of the name
    after it, so it never shares the folder of an agent named `jos` or `agent`, or another
    such name's."""
    if not actor_id:
        return GLOBAL_PREFIX
    return f"{AGENT_PREFIX}{named_segment(actor_id, _slug_of(actor_id), fallback='agent', width=64)}/"


def legacy_namespace(actor_id: str | None) -> str:
    """The folder an earlier release filed the actor's facts under (the bare slug): for a name
    `namespace` now adds a digest to, its older facts stay there."""
    return f"{AGENT_PREFIX}{_slug(actor_id)}/" if actor_id else GLOBAL_PREFIX


def namespaces(actor_id: str | None) -> tuple[str, ...]:
    """Every folder holding the actor's facts: its own, then its legacy one if that differs."""
    return tuple(dict.fromkeys((namespace(actor_id), legacy_namespace(actor_id))))


def _slug(actor_id: str) -> str:
    return (_slug_of(actor_id) or "agent")[:64]


def _slug_of(actor_id: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", actor_id.lower()).strip("-.")


def fact_path(ns: str, text: str, actor_id: str | None = None) -> str:
    """Where a fact's note lives: derived from its words, so the same fact lands on the same note.
    Actors whose names share a folder (`user/42` and `user:42`, `Alice` and `alice`) keep apart:
    an actor whose name is not its folder's slug has its name in the digest too."""
    normal = " ".join(_WORD.findall(text.lower()))
    slug = "-".join(normal.split()[:10])[:64].strip("-") or "fact"
    salt = f"{actor_id}\x00" if actor_id and _slug(actor_id) != actor_id else ""
    digest = hashlib.sha256((salt + normal).encode()).hexdigest()[:10]
    return f"{ns}{slug}-{digest}.md"


def csv_values(value: MetadataValue) -> list[str]:
    """The items of a comma-joined metadata value (origins, source ids, ...)."""
    return [v for v in str(value).split(",") if v] if value else []


def _merged(old: list[str], new: Sequence[str], limit: int) -> list[str]:
    out = list(dict.fromkeys([*old, *new]))
    return out[-limit:]


class FactMemory:
    def __init__(self, documents: DocumentService, search: SearchService, *, dedupe_overlap: float = 0.85):
        self.documents = documents
        self.search = search
        self.dedupe_overlap = dedupe_overlap

    def store(self, brain: Brain, draft: FactDraft, prov: Provenance) -> StoredFact:
        ns = namespace(prov.actor_id)
        path = fact_path(ns, draft.text, prov.actor_id)
        live = self.documents.exists(brain, path)
        if not live and (removed := self._removed(brain, path, prov)) is not None:
            return StoredFact(removed, "unchanged")
        twin = None if live else self._twin(brain, draft.text, prov.actor_id)
        if twin is not None and twin.metadata.get("kind") != FACT_KIND:
            return StoredFact(twin, "known")  # never rewrite someone's own note
        target = twin.path if twin is not None else path
        state: dict[str, Literal["created", "confirmed", "unchanged"]] = {}

        def change(doc: Document | None, body: bytes | None) -> tuple[bytes, DocumentInput] | None:
            if doc is None:
                state["outcome"] = "created"
                return draft.text.encode("utf-8"), self._new_info(draft, prov)
            origins = csv_values(doc.metadata.get("origins"))
            sources = csv_values(doc.metadata.get("source_ids"))
            if prov.origin in origins and set(prov.source_ids) <= set(sources):  # a rerun
                state["outcome"] = "unchanged"
                return None
            state["outcome"] = "confirmed"
            text = (body or b"").decode("utf-8", "replace")
            body = merged_body(text, [draft.text]).encode("utf-8")
            origins = _merged(origins, [prov.origin], MAX_ORIGINS)
            meta = dict(doc.metadata)
            meta.update(
                origins=",".join(origins),
                source_ids=",".join(_merged(sources, prov.source_ids, MAX_SOURCE_IDS)),
                confirmations=len(origins),
            )
            facet = (doc.memory or MemoryFacet()).model_copy(update={"strength": float(len(origins))})
            return body, keep_info(doc, metadata=meta, memory=facet)

        outcome = self.documents.modify(brain, target, change, reason="extract")
        doc = outcome.document if outcome else self.documents.get(brain, target)
        return StoredFact(doc, state.get("outcome", "unchanged"))

    def _removed(self, brain: Brain, path: str, prov: Provenance) -> Document | None:
        """The note this very origin and these source ids stored at `path`, deleted (or merged)
        since: a job run again (at least once) must not bring back what was removed after its
        first run. The note's own provenance, written with it, is the key."""
        doc = self.documents.repo.get(brain.id, path)
        if doc is None or doc.deleted_at is None or doc.metadata.get("kind") != FACT_KIND:
            return None
        origins = csv_values(doc.metadata.get("origins"))
        sources = set(csv_values(doc.metadata.get("source_ids")))
        return doc if prov.origin in origins and set(prov.source_ids) <= sources else None

    def _twin(self, brain: Brain, text: str, actor_id: str | None) -> Document | None:
        """The note that already says this: in the actor's folder, or one of the actor's own facts
        an earlier release filed under its legacy folder (another agent's folder now: only
        the actor's fact notes there count)."""
        own, *legacy = namespaces(actor_id)
        for folder in legacy:
            path = fact_path(folder, text, actor_id)
            if self.documents.exists(brain, path):
                old = self.documents.get(brain, path)
                if old.metadata.get("kind") == FACT_KIND and old.metadata.get("actor_id") == actor_id:
                    return old
        for folder in (own, *legacy):
            if (twin := self._near_duplicate(brain, folder, text, actor_id, notes=folder == own)) is not None:
                return twin
        return None

    def _near_duplicate(
        self, brain: Brain, ns: str, text: str, actor_id: str | None, *, notes: bool = True
    ) -> Document | None:
        """A note of the folder that already says this; another actor's fact note never does
        (an erasure of one actor must not find its words in the other's note), nor, unless
        `notes`, a note that is not a fact."""
        tokens = fact_tokens(text)
        result = self.search.search(
            brain, text, top_k=DEDUPE_CANDIDATES, path_prefix=ns, count_access=False, language=False
        )  # a fact's quotes and capital NOT are its words, not the query language
        for hit in result.hits:
            words = fact_tokens(hit.content)
            if hit.metadata.get("kind") == FACT_KIND:
                if hit.metadata.get("actor_id") != actor_id:
                    continue
                if same_fact(tokens, words, self.dedupe_overlap):
                    return self.documents.get_by_id(brain, hit.document_id)
            elif notes and tokens and tokens <= words:
                return self.documents.get_by_id(brain, hit.document_id)
        return None

    @staticmethod
    def _new_info(draft: FactDraft, prov: Provenance) -> DocumentInput:
        meta: dict[str, MetadataValue] = {
            "kind": FACT_KIND,
            "category": draft.category,
            "extracted_by": prov.extracted_by,
            "origins": prov.origin,
            "source_ids": ",".join(prov.source_ids[-MAX_SOURCE_IDS:]),
            "confirmations": 1,
        }
        if draft.subject:
            meta["subject"] = draft.subject[:256]
        if draft.entities:
            meta["entities"] = ",".join(draft.entities)[:2048]
        if prov.actor_id:
            meta["actor_id"] = prov.actor_id
        facet = MemoryFacet(
            type=draft.type,
            subject=draft.subject,
            importance=min(1.0, max(0.0, draft.importance)),
            category=draft.category,
            sector="semantic",
            strength=1.0,
            source_agent=prov.actor_id,
        )
        return DocumentInput(
            title=draft.text[:200],
            metadata=meta,
            source=DocumentSource.extract,
            content_type="text/markdown",
            memory=facet,
        )
