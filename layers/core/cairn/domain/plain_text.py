"""Cheap tests that answer as a case-insensitive pattern of ASCII words would.

A pattern of ASCII words, matched case-insensitively (`re.IGNORECASE`), finds exactly the places
where the lower-cased text holds those words, in every text but one holding one of four characters
that match an ASCII letter case-insensitively or lower-case to more than one character: İ ı ſ K
(checked over all of Unicode in tests/unit/services/test_concepts.py). Such text is `plain`, and
lower-casing it keeps every character a word, space or other character as it was. So in plain
text a word of a pattern that must stand between non-word characters can only match where it is
one of `runs(text.lower())`: a test to run before the pattern."""

from __future__ import annotations

import re

RUN = re.compile(r"\w+")  # a pattern's word characters, `\w`
_FOLDS_ONTO_ASCII = re.compile("[\u0130\u0131\u017f\u212a]")
_ASCII_FOLDS = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})


def plain(text: str) -> bool:
    """Whether `text` has none of the four characters (see the module's docstring)."""
    return text.isascii() or _FOLDS_ONTO_ASCII.search(text) is None


def runs(lowered: str) -> set[str]:
    """The `\\w+` runs of a lower-cased text."""
    return set(RUN.findall(lowered))


def folded(text: str) -> str:
    """`text` with each of the four characters made the ASCII letter it matches (both cases of
    it, and no other, in a case-insensitive pattern): `plain`, and a pattern of ASCII words matches
    it wherever it matches `text` (the four are word characters, as their letters are)."""
    return text.translate(_ASCII_FOLDS)
