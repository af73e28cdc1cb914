"""What the embedded model's vector cannot hold: symbols its vocabulary lacks.

MiniLM's WordPiece vocabulary has no emoji, runes, Gothic, Cherokee and many other scripts: each
word of them is one `[UNK]` token, the same for every such word. So every text made only of them
("🚀", "ᚠᚢᚦ", "🎉🎉") got one and the same vector: a question of emoji matched every note of other
emoji at cosine 1.0, and the calibration called it a good match; and which symbols a text holds
counted for nothing.

A text's unknown symbols are therefore given a vector of their own (`symbol_vector`): the
normalised sum of one pseudo-random direction per symbol, counted as often as it occurs, so "🎉"
and "🎉🎉" point the same way, "🎉🚀" lies between them and "🚀", and other symbols, like any
text the model reads, lie at a cosine near 0 (random directions in 384 dimensions: within ±0.2 on
everything tested). A text made only of unknown symbols gets that vector alone; a text with words
too gets the model's vector and the symbols' mixed by the share of its tokens that are `[UNK]`
(`with_symbols`), so a note that is mostly an emoji is found by it and the rare emoji of a long
message hardly moves its vector (a tenth of the tokens: a cosine of 0.995 with the model's).
Only characters the vocabulary lacks count: a word of known letters is `[UNK]` too when it is
over a hundred characters long (a key, a base64 run), and its letters say nothing about it.
Marks, variation selectors and joiners count only when a text has nothing else. A symbol's
direction comes from SHAKE-256 of its UTF-8 bytes, so it is the same on every machine and
release: stored vectors depend on it.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Final

import numpy as np

from cairn.ports.embedder import Vectors

_QUIET: Final = frozenset({"Mn", "Me", "Cf"})  # marks, variation selectors, zero-width joiners


def unknown_symbols(
    text: str, spans: Sequence[tuple[int, int]], lacks: Callable[[str], bool]
) -> Counter[str]:
    """The characters of `text` in its `[UNK]` tokens' `spans` that the vocabulary `lacks`, each
    with its count; marks and joiners only when there is nothing else."""
    held = Counter(ch for start, end in spans for ch in text[start:end] if not ch.isspace() and lacks(ch))
    loud = Counter({ch: n for ch, n in held.items() if unicodedata.category(ch) not in _QUIET})
    return loud or held


def with_symbols(model: Vectors, symbols: Counter[str], share: float) -> Vectors:
    """The unit vector of a text the model read: its vector and its unknown `symbols`' mixed by
    `share`, the part of its tokens that are `[UNK]`."""
    mixed = (1.0 - share) * model.astype(np.float64) + share * symbol_vector(symbols, model.shape[-1])
    return (mixed / np.linalg.norm(mixed)).astype(np.float32)


def symbol_vector(symbols: Counter[str], dimension: int) -> Vectors:
    """The unit vector of a text made only of unknown `symbols`."""
    total = np.zeros(dimension, dtype=np.float64)
    for symbol, count in symbols.items():
        total += count * _direction(symbol, dimension)
    return (total / np.linalg.norm(total)).astype(np.float32)


def _direction(symbol: str, dimension: int) -> np.ndarray:
    raw = np.frombuffer(hashlib.shake_256(symbol.encode("utf-8")).digest(4 * dimension), dtype="<u4")
    centred = raw.astype(np.float64) / 2.0**31 - 1.0  # uniform on [-1, 1): zero mean, no sign bias
    unit: np.ndarray = centred / np.linalg.norm(centred)
    return unit
