"""The symbols the brains' FTS5 tokenizer is told to split at (unicode61's `separators`).

unicode61 classes characters by SQLite's own Unicode tables, far older than today's: a code point
they do not know is a token character whatever `categories` says, so the emoji and symbols added
since (🤗 🥳 🧠 🦀, the skin-tone modifiers, Sutton SignWriting, ...) joined the letters beside
them ("thanks🤗" was one token, and "thanks" did not find it). domain/words.py, on Python's
tables, splits there, as OpenSearch's standard tokenizer does. These ranges are every code point
that Python's tables call a symbol (`So`, `Sk`), or that is still unassigned in the emoji blocks
(U+1F000 to U+1FBFF: the emoji of later Unicode versions), and that unicode61 would otherwise keep
as a token character; symbols it already splits at are left out, keeping the list (and so each
brain's schema) short. The list is fixed, not computed when a process starts: it is part of every
brain's table definition, which must read the same on every machine (fts_retokenize.py rebuilds
a table whose definition differs). tests/unit/test_fts_separators.py checks it against the
tables of the Python and SQLite at hand.
"""

from __future__ import annotations

RANGES: tuple[tuple[int, int], ...] = (
    (0x58D, 0x58E),
    (0x888, 0x888),
    (0xD4F, 0xD4F),
    (0x218A, 0x218B),
    (0x23F4, 0x23FF),
    (0x2700, 0x2700),
    (0x2B4D, 0x2B4F),
    (0x2B5A, 0x2B73),
    (0x2B76, 0x2B95),
    (0x2B97, 0x2BFF),
    (0x2E50, 0x2E51),
    (0x32FF, 0x32FF),
    (0xAB5B, 0xAB5B),
    (0xAB6A, 0xAB6B),
    (0xFBC2, 0xFBC2),
    (0xFD40, 0xFD4F),
    (0xFDCF, 0xFDCF),
    (0xFDFE, 0xFDFF),
    (0x1018C, 0x1018E),
    (0x1019C, 0x1019C),
    (0x101A0, 0x101A0),
    (0x10877, 0x10878),
    (0x10AC8, 0x10AC8),
    (0x1173F, 0x1173F),
    (0x11FD5, 0x11FDC),
    (0x11FE1, 0x11FF1),
    (0x16B3C, 0x16B3F),
    (0x16B45, 0x16B45),
    (0x1BC9C, 0x1BC9C),
    (0x1CF50, 0x1CFC3),
    (0x1D1DE, 0x1D1EA),
    (0x1D800, 0x1D9FF),
    (0x1DA37, 0x1DA3A),
    (0x1DA6D, 0x1DA74),
    (0x1DA76, 0x1DA83),
    (0x1DA85, 0x1DA86),
    (0x1E14F, 0x1E14F),
    (0x1ECAC, 0x1ECAC),
    (0x1ED2E, 0x1ED2E),
    (0x1F02C, 0x1F02F),
    (0x1F094, 0x1F09F),
    (0x1F0AF, 0x1F0B0),
    (0x1F0BF, 0x1F0C0),
    (0x1F0D0, 0x1F0D0),
    (0x1F0E0, 0x1F0FF),
    (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F12F),
    (0x1F16C, 0x1F16F),
    (0x1F19B, 0x1F1E5),
    (0x1F203, 0x1F20F),
    (0x1F23B, 0x1F23F),
    (0x1F249, 0x1F24F),
    (0x1F252, 0x1F2FF),
    (0x1F321, 0x1F32F),
    (0x1F336, 0x1F336),
    (0x1F37D, 0x1F37F),
    (0x1F394, 0x1F39F),
    (0x1F3C5, 0x1F3C5),
    (0x1F3CB, 0x1F3DF),
    (0x1F3F1, 0x1F3FF),
    (0x1F43F, 0x1F43F),
    (0x1F441, 0x1F441),
    (0x1F4F8, 0x1F4F8),
    (0x1F4FD, 0x1F4FF),
    (0x1F53E, 0x1F53F),
    (0x1F544, 0x1F54F),
    (0x1F568, 0x1F5FA),
    (0x1F641, 0x1F644),
    (0x1F650, 0x1F67F),
    (0x1F6C6, 0x1F6FF),
    (0x1F774, 0x1FBEF),
    (0x1FBFA, 0x1FBFF),
)

SEPARATORS = "".join(chr(cp) for first, last in RANGES for cp in range(first, last + 1))
"""The characters themselves, as unicode61 takes them; none is ASCII, so FTS5 reads them as one
bare word and they need no quoting inside the tokenize option."""
