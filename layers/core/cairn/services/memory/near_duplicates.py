"""Near-duplicate groups among short notes: embedding similarity AND lexical overlap.

Either signal alone merges things that should stay apart — embeddings pair "Alice likes tea" with
"Alice likes coffee", token overlap pairs long notes sharing boilerplate — so a pair needs both:
cosine at least `min_cosine`, and one note's words containing the other's or a token Jaccard of
at least `min_overlap` (fact_memory.same_fact); only notes in the same folder are compared.
Pairs join into groups transitively (union-find). Cosines are computed block by block, so
5,000 notes need one 5,000 x 5,000 pass in 512-row slices.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cairn.ports.embedder import Vectors
from cairn.services.memory.fact_memory import fact_tokens, same_fact

BLOCK = 512


class _Groups:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def near_duplicate_groups(
    texts: Sequence[str],
    folders: Sequence[str],
    vectors: Vectors,
    *,
    min_cosine: float = 0.9,
    min_overlap: float = 0.7,
) -> list[list[int]]:
    """Groups of two or more indexes into `texts` that say the same thing, each sorted."""
    n = len(texts)
    if n < 2:
        return []
    tokens = [fact_tokens(t) for t in texts]
    folder_ids = np.unique(np.asarray(folders), return_inverse=True)[1]
    groups = _Groups(n)
    for start in range(0, n, BLOCK):
        block = vectors[start : start + BLOCK] @ vectors.T
        rows, cols = np.nonzero(block >= min_cosine)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i = start + r
            if c <= i or folder_ids[i] != folder_ids[c]:
                continue
            if same_fact(tokens[i], tokens[c], min_overlap):
                groups.union(i, c)
    members: dict[int, list[int]] = {}
    for i in range(n):
        members.setdefault(groups.find(i), []).append(i)
    return [sorted(m) for m in members.values() if len(m) > 1]
