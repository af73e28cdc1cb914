"""A memory's five sector embeddings (ThoughtMCP's hierarchical memory decomposition) and where
the four besides the semantic one are kept.

ThoughtMCP embeds every memory five times: the text itself (semantic) and the text set in what
each other sector is about. Cairn does the same, in words the embedded model understands rather
than bracketed markers:

- **semantic**: the text. This one is the memory's chunk vector in the chunk index, shared with
  every other surface's search, so it is not stored twice.
- **episodic**: the text as something that happened, on its date, in its context.
- **procedural**: the text as a way of doing something, step by step.
- **emotional**: the text with the feeling it carries (metacognition/emotion.py reads it).
- **reflective**: the text as what it says about its keywords, tags and category.

The four are one record item per memory, written in the same transaction as the memory's
document and row, so a memory acknowledged is searchable by every sector, and removed with it:

| record          | pk                                        | sk            |
|-----------------|-------------------------------------------|---------------|
| sector vectors  | `thoughts#<brain>#<user key>#sectors`     | `<memory id>` |

The partition starts with the brain's ThoughtMCP prefix, so deleting a brain removes it with the
rows. Vectors are stored as float16 (a cosine moves by < 1e-3), with the model that made them: a
memory embedded by another model (the embedder was changed) is searched by its semantic vector
alone until it is written again or `cairn check --deep` embeds it again (stale_sectors.py), and
one stored before sector embeddings existed until it is written again. Where the embedder gives
some texts' vectors a version (ports/embedder.py VersionedVectors: the embedded model's vectors of
symbols its vocabulary lacks), the record holds the version of its four texts' vectors too
(absent: "", what every text had before versions), so a deep check finds the records an older
release embedded.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

import numpy as np

from cairn.domain.paths import user_key
from cairn.ports.embedder import Embedder, Vectors, VersionedVectors
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.repositories import delete_partition, get_all
from cairn.services.thoughtmcp.metacognition.emotion import detect
from cairn.services.thoughtmcp.models import Row
from cairn.services.thoughtmcp.rows import thoughts_prefix

SEMANTIC: Final = "semantic"
VIEWS: Final = ("episodic", "procedural", "emotional", "reflective")
"""The sectors embedded apart from the text itself, in the order they are stored."""
EMBEDDINGS: Final = 1 + len(VIEWS)
VIEW_CHARS: Final = 2000  # more than the embedded model reads (256 tokens); Titan reads 8k tokens
_NEUTRAL: Final = 0.05


def sector_texts(content: str, row: Row) -> dict[str, str]:
    """What each of the four stored sectors embeds for this memory."""
    text = " ".join(content[:VIEW_CHARS].split())
    when = _day(row.created_at)
    setting = f", {row.context.strip()}" if row.context and row.context.strip() else ""
    circumplex, discrete = detect(text, include_discrete=True, timestamp="")
    valence = circumplex.valence
    tone = "positive" if valence > _NEUTRAL else "negative" if valence < -_NEUTRAL else "neutral"
    feeling = discrete.primary if discrete is not None and discrete.primary else tone
    about = ", ".join(dict.fromkeys([*row.keywords, *row.tags, *([row.category] if row.category else [])]))
    return {
        "episodic": f"What happened on {when}{setting}: {text}",
        "procedural": f"How to do it, step by step: {text}",
        "emotional": f"Feeling {feeling} ({tone}): {text}",
        "reflective": f"What this says about {about or 'it'}: {text}",
    }


def _day(at: datetime) -> str:
    return f"{at:%A} {at.day} {at:%B %Y}"


@dataclass(frozen=True)
class Embedded:
    """A memory's four stored sector vectors and the version of their texts' vectors."""

    vectors: dict[str, Vectors]
    version: str = ""


def texts_version(embedder: Embedder, texts: Sequence[str]) -> str:
    """The versions the embedder gives these texts' vectors, "" when it gives none (most texts)."""
    if not isinstance(embedder, VersionedVectors):
        return ""
    return ",".join(sorted({v for v in map(embedder.vector_version, texts) if v}))


class SectorVectors:
    """The stored sector embeddings of a user's memories (module docstring)."""

    def __init__(self, records: RecordStore, embedder: Embedder) -> None:
        self.records = records
        self.embedder = embedder

    def embed(self, content: str, row: Row) -> Embedded:
        return self.embed_many([(content, row)])[0]

    def embed_many(self, memories: Sequence[tuple[str, Row]]) -> list[Embedded]:
        """Each memory's sector vectors, in one call of the embedder."""
        texts = [[sector_texts(content, row)[s] for s in VIEWS] for content, row in memories]
        vectors = self.embedder.embed([t for four in texts for t in four])
        return [
            Embedded(
                {s: vectors[n * len(VIEWS) + i] for i, s in enumerate(VIEWS)},
                texts_version(self.embedder, four),
            )
            for n, four in enumerate(texts)
        ]

    def version(self, content: str, row: Row) -> str:
        """The version a record of this memory's sector vectors made now holds (no embedding)."""
        texts = sector_texts(content, row)
        return texts_version(self.embedder, [texts[s] for s in VIEWS])

    def put_op(
        self,
        brain_id: str,
        user_id: str,
        memory_id: str,
        made: Embedded,
        *,
        expected_version: int | None = None,
    ) -> Put:
        """The op writing the record; `expected_version`: only while it is at that version."""
        data: dict[str, object] = {
            "model": self.embedder.model_id,
            "dimension": self.embedder.dimension,
            "vectors": _encoded(
                np.stack([np.asarray(made.vectors[s], dtype=np.float32).ravel() for s in VIEWS])
            ),
        }
        if made.version:
            data["version"] = made.version
        return Put(Item(sectors_pk(brain_id, user_id), memory_id, data), expected_version)

    def current(self, item: Item, version: str) -> bool:
        """Whether a stored record is what embedding its memory now would store: the same model,
        dimension and vector version (`version`, of the memory's texts now), and readable."""
        d = item.data
        return (
            self._by_this_model(d)
            and (d.get("version") or "") == version
            and _decoded(d.get("vectors"), len(VIEWS), self.embedder.dimension) is not None
        )

    def items(self, brain_id: str, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Item]:
        """The stored records of these (user id, memory id) pairs, undecoded, by that pair."""
        wanted = {(sectors_pk(brain_id, user), memory_id): (user, memory_id) for user, memory_id in keys}
        found = get_all(self.records, list(wanted))
        return {wanted[key]: item for key, item in found.items()}

    @staticmethod
    def delete_op(brain_id: str, user_id: str, memory_id: str) -> Delete:
        return Delete(sectors_pk(brain_id, user_id), memory_id)

    def get(self, brain_id: str, user_id: str, ids: Sequence[str]) -> dict[str, dict[str, Vectors]]:
        """Memory id -> sector -> unit vector, for those of `ids` embedded by the current model."""
        pk = sectors_pk(brain_id, user_id)
        items = get_all(self.records, [(pk, i) for i in dict.fromkeys(ids) if isinstance(i, str) and i])
        out: dict[str, dict[str, Vectors]] = {}
        for item in items.values():
            d = item.data
            if not self._by_this_model(d):
                continue
            matrix = _decoded(d["vectors"], len(VIEWS), self.embedder.dimension)
            if matrix is not None:
                out[item.sk] = {s: matrix[i] for i, s in enumerate(VIEWS)}
        return out

    def _by_this_model(self, data: dict[str, object]) -> bool:
        embedder = self.embedder
        return data.get("model") == embedder.model_id and data.get("dimension") == embedder.dimension

    def delete_user(self, brain_id: str, user_id: str) -> int:
        return delete_partition(self.records, sectors_pk(brain_id, user_id))


def sectors_pk(brain_id: str, user_id: str) -> str:
    return f"{thoughts_prefix(brain_id)}{user_key(user_id)}#sectors"


def _encoded(matrix: Vectors) -> str:
    return base64.b64encode(matrix.astype("<f2").tobytes()).decode("ascii")


def _decoded(text: object, rows: int, dimension: int) -> Vectors | None:
    """The stored matrix, each row unit length again; None when the item is not one."""
    try:
        raw = base64.b64decode(str(text), validate=True)
    except ValueError:
        return None
    if len(raw) != rows * dimension * 2:
        return None
    matrix = np.frombuffer(raw, dtype="<f2").astype(np.float32).reshape(rows, dimension)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms
