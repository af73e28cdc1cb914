"""How relevant a retrieved chunk is to a query, as a calibrated number every surface can show.

The fused rank score (RRF) says only how a hit compares with the others of its own query: an
unrelated question gets the same shape of list, with the same top score, as one the brain can
answer. Relevance here is absolute: a logistic curve over the cosine similarity of the query and
the chunk, which means the same thing in every query.

    relevance = 1 / (1 + exp(-SLOPE * (cosine - MIDPOINT)))

A cosine's scale is the embedding model's, so the curve is a Calibration chosen for the model
at start-up (`calibration_for`): the embedded MiniLM model's is known (docs/RELEVANCE.md: the
team-memory fixture in bench/data/relevance/, measured with bench/relevance.py), any other model's
is set by CAIRN_RELEVANCE_MIDPOINT and CAIRN_RELEVANCE_SLOPE, which `cairn calibrate` fits on
labelled questions (`fit`). 0.5 is the line between "nothing here answers this" and "a good match".
On MiniLM and that fixture the best match of 80 % of the questions with an answer lies above it,
and the best match of 20 % of the questions without one.

The order of a search's hits is another matter (`blend`): the cosine alone misses what only words
find (names, dates), so hits are ordered by a blend of both legs, each normalised within the
query's candidates, as gbrain blends them: on the team-memory fixture and the LoCoMo dev split it
beats reciprocal rank fusion on both (docs/RELEVANCE.md).

Every candidate of both legs gets a similarity: the vector leg's hits carry theirs, a chunk that
only the keyword leg found has it computed from its stored vector (one batch read).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from cairn.domain.models import Chunk
from cairn.ports.chunks import ChunkHit, ChunkIndex
from cairn.ports.embedder import Vectors
from cairn.services.search.identifiers import ABOUT, Asked, Sought

GOOD_MATCH: Final = 0.5
"""A hit at or above this relevance answers the query (the calibration's midpoint)."""


@dataclass(frozen=True)
class Calibration:
    """The logistic curve from one embedding model's cosine to relevance."""

    midpoint: float
    slope: float

    def __call__(self, cosine: float) -> float:
        return 1.0 / (1.0 + math.exp(-self.slope * (cosine - self.midpoint)))

    def lowered(self, by: float) -> Calibration:
        """The same curve with its midpoint `by` lower on the cosine: 0.5 reached sooner."""
        return Calibration(self.midpoint - by, self.slope)


EMBEDDED: Final = Calibration(midpoint=0.40, slope=12.0)
"""The embedded MiniLM model's (a balanced logistic fit on the team-memory fixture gives 0.43 and
11.5, on the second fixture 0.42 and 11.0)."""
KNOWN: Final = {"all-minilm-l6-v2-int8": EMBEDDED}


def calibration_for(model_id: str, midpoint: float | None, slope: float | None) -> Calibration | None:
    """The calibration of this model: the one given (both parts), else the known one; None when
    neither (the caller says that scores are then on the embedded model's scale)."""
    if midpoint is not None and slope is not None:
        return Calibration(midpoint, slope)
    return KNOWN.get(model_id)


@dataclass(frozen=True)
class Judged:
    """A chunk hit with the cosine similarity of every candidate and its calibrated relevance."""

    hit: ChunkHit
    similarity: float
    relevance: float


def judge(
    chunks: ChunkIndex, hits: Sequence[ChunkHit], vector: Sequence[float], calibration: Calibration
) -> list[Judged]:
    """`hits` judged, in their order, on the embedding model's calibration; a hit whose vector is
    gone (a race with a delete) gets similarity 0."""
    computed = cosines(chunks, vector, [h.chunk for h in hits if h.vector_similarity is None], {})
    judged: list[Judged] = []
    for hit in hits:
        similarity = hit.vector_similarity
        if similarity is None:
            similarity = computed.get(hit.chunk.id, 0.0)
        judged.append(Judged(hit, similarity, calibration(similarity)))
    return judged


def cosines(
    chunks: ChunkIndex, vector: Sequence[float], found: Sequence[Chunk], known: Mapping[str, float]
) -> dict[str, float]:
    """The cosine of each chunk in `found` with the query: from `known` (a vector leg's), else
    from its stored vector; a chunk whose vector is gone has none."""
    query = np.asarray(vector, dtype=np.float32)
    out = {c.id: known[c.id] for c in found if c.id in known}
    for chunk_id, stored in stored_vectors(chunks, [c for c in found if c.id not in out]).items():
        out[chunk_id] = float(np.asarray(stored, dtype=np.float32).reshape(-1) @ query)
    return out


def stored_vectors(chunks: ChunkIndex, found: Iterable[Chunk]) -> dict[str, Vectors]:
    """The stored vector of each chunk in `found`, by chunk id: one batch read per brain; a chunk
    whose vector is gone (a race with a delete) has none."""
    by_brain: dict[str, list[str]] = {}
    for chunk in found:
        by_brain.setdefault(chunk.brain_id, []).append(chunk.id)
    out: dict[str, Vectors] = {}
    for brain_id, ids in by_brain.items():
        out.update(chunks.get_vectors(brain_id, ids))
    return out


VECTOR_SHARE: Final = 0.6
KEYWORD_SHARE: Final = 0.4


def _own(chunk: Chunk) -> str:
    return f"{chunk.title}\n{chunk.text}"


IDENTIFIER_REACH: Final = 0.25
"""How far a note naming an identifier of the query may lie below the nearest candidate's cosine
and still be lifted first (`naming`), when the identifier names one thing beyond doubt."""

EVERYDAY_REACH: Final = 0.05
"""The same for a query whose identifiers are short (ec2, mp4, 3pm, iphone15): words of the
question as often as the thing it is about, they lift only a note as near as the nearest."""


def naming(judged: Sequence[Judged], exact: Asked) -> list[float]:
    """For each judged hit, how far it is lifted as the note that names the thing asked about; 0
    when it is not. It is when its own text or title names an identifier of the query and, unless
    the query is bare, its meaning is near the nearest candidate's (within IDENTIFIER_REACH of its
    cosine, EVERYDAY_REACH for short identifiers): a note that only lists the id among unrelated
    words, asked a question about something else, lies far below the notes that answer it and
    keeps its own place. The lift is the note's `share` of the asked identifiers: 1 for the
    incident note that names INC-20049 (and a host, web3, of another sort), 1/15 for an audit list
    of fifteen incident ids, which names the one asked about too but is not about it."""
    if not exact.words or not judged:
        return [0.0] * len(judged)
    near = IDENTIFIER_REACH if exact.strong else EVERYDAY_REACH
    reach = -math.inf if exact.bare else max(j.similarity for j in judged) - near
    sought = Sought(exact.words)
    return [sought.note_share(_own(j.hit.chunk)) if j.similarity >= reach else 0.0 for j in judged]


NOTHING_ASKED: Final = Asked()


def blend(
    judged: Sequence[Judged], exact: Asked = NOTHING_ASKED, lifted: Sequence[float] | None = None
) -> list[float]:
    """For each judged hit: VECTOR_SHARE x its cosine scaled to 0..1 between the candidates' lowest
    and highest, plus KEYWORD_SHARE x its BM25 score over the candidates' highest (0 when the
    keyword leg did not find it). When the index reports no leg scores (OpenSearch fusing in its
    search pipeline), the fused score stands in for the keyword leg's. A hit that names the thing
    asked about (`naming`, a share of ABOUT and more) gains both shares more: a near twin's
    meaning, or another note's excerpt in its keyword context, never outranks it, and the notes
    about it are ordered among themselves by the legs alone (a root-cause note that also names a
    related incident is not put below a one-line mention); a list that names it among many gains
    KEYWORD_SHARE x its share. `lifted`: `naming(judged, exact)`, when the caller has it."""
    if not judged:
        return []
    low = min(j.similarity for j in judged)
    span = max(j.similarity for j in judged) - low
    keyword = [j.hit.bm25_score or 0.0 for j in judged]
    if all(j.hit.bm25_score is None and j.hit.bm25_rank is None for j in judged):
        keyword = [j.hit.score for j in judged]
    top = max(keyword)
    if lifted is None:
        lifted = naming(judged, exact)
    return [
        VECTOR_SHARE * ((j.similarity - low) / span if span > 0 else 1.0)
        + KEYWORD_SHARE * (k / top if top > 0 else 0.0)
        + (VECTOR_SHARE + KEYWORD_SHARE if lift >= ABOUT else KEYWORD_SHARE * lift)
        for j, k, lift in zip(judged, keyword, lifted, strict=True)
    ]
