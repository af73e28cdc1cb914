"""The keyword leg of every ChunkIndex finds a word of any script as the text spells it: Hangul,
Greek with its accents, Cyrillic ё, kana with their voicing marks, and Latin with or without its
diacritics. Folding a query's words further than the index folds its own (every script's marks
stripped after a compatibility decomposition) matched nothing on the embedded index."""

from __future__ import annotations

import numpy as np
import pytest

from cairn.ports.chunks import ChunkIndex
from tests.contract.test_chunk_index_contract import axis, chunk, index, make_index, search

__all__ = ["index", "make_index"]  # the contract's fixtures: each adapter in turn

TEXTS = {
    "ko": "서울은 한국의 수도이다",
    "el": "Το σπίτι είναι μεγάλο",
    "ru": "ёлка стоит в лесу",
    "ja": "がっこう に いく",
    "fr": "la crème brûlée du café",
}


@pytest.mark.parametrize(
    ("asked", "found"),
    [
        ("서울은", "ko"),
        ("σπίτι", "el"),
        ("ёлка", "ru"),
        ("がっこう", "ja"),
        ("creme brulee", "fr"),
        ("Crème", "fr"),
    ],
)
def test_an_exact_word_of_any_script_is_found(index: ChunkIndex, asked: str, found: str) -> None:
    index.upsert(
        [chunk(cid, text) for cid, text in TEXTS.items()], np.stack([axis(i) for i in range(len(TEXTS))])
    )
    assert search(index, asked) == [found]
