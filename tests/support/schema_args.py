"""Hypothesis strategies for a tool's arguments, from the JSON Schema its `tools/list` entry shows:
arguments the schema accepts (`valid`) and arguments with one value of any JSON kind in place
(`mangled`), which the tool must refuse in its own style. Only the keywords Cairn's tool schemas
use are read (type, anyOf, enum, properties, required, items, the length, size and range bounds,
pattern and format); anything else becomes any JSON value."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

NASTY = (
    "",
    " ",
    "\x00",
    "\u202egnp.exe",
    "../../etc/passwd",
    "memory/global/../../x.md",
    '"',
    "*",
    "a OR b NOT c",
    "NEAR(a b, 2)",
    "col:value",
    "^start",
    "'; DROP TABLE records; --",
    "%s%n{0}",
    "\U0001f600 émoji",
    "line\nbreak",
    "0",
    "-1",
    "null",
    "2024-02-30T25:61:00Z",
    "x" * 5000,
)
"""Strings that have broken parsers, query languages, paths and encoders elsewhere. No lone
surrogate: the HTTP and stdio transports refuse one before any tool sees it (a parse error), and
the in-memory client used here passes strings as they are."""

COMMON = (
    "fact",
    "event",
    "decision",
    "status",
    "semantic",
    "episodic",
    "procedural",
    "critical",
    "high",
    "low",
    "global",
    "person",
    "memory/global/note.md",
    "note.md",
    "2025-06-01T00:00:00Z",
)
"""Values the tools take as free text with a meaning (zengram's types and importance, paths,
times), so drawn arguments reach past the first check."""

MAX_ITEMS = 4
MAX_BOUND = 10_000
"""Strings as long as a maxLength up to this are drawn too (a document's 1 MiB is not)."""
MAX_TEXT = 80

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(NASTY)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def valid(schema: dict[str, Any], words: tuple[str, ...] = ()) -> st.SearchStrategy[Any]:
    """Values the schema accepts (as far as its keywords go); `words` are strings worth trying
    wherever a string goes (a brain's slug, a stored memory's id)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([valid(s, words) for s in schema["anyOf"]])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([valid({**schema, "type": k}, words) for k in kind])
    if kind == "object":
        return _object(schema, words)
    if kind == "string":
        return _string(schema, words)
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        low, high = schema.get("minimum"), schema.get("maximum")
        return st.floats(low, high, allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        least = schema.get("minItems", 0)
        most = max(least, min(schema.get("maxItems", MAX_ITEMS), MAX_ITEMS))
        return st.lists(valid(schema.get("items", {}), words), min_size=least, max_size=most)
    return json_values


def mangled(schema: dict[str, Any], words: tuple[str, ...] = ()) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments the schema mostly accepts, with one property (named or not) holding any JSON value."""
    properties = [*schema.get("properties", {}), "unexpected"]
    return st.tuples(valid(schema, words), st.sampled_from(properties), json_values).map(
        lambda drawn: {**drawn[0], drawn[1]: drawn[2]}
    )


def _object(schema: dict[str, Any], words: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    return st.fixed_dictionaries(
        {name: valid(s, words) for name, s in properties.items() if name in required},
        optional={name: valid(s, words) for name, s in properties.items() if name not in required},
    )


def _string(schema: dict[str, Any], words: tuple[str, ...]) -> st.SearchStrategy[str]:
    least, most = schema.get("minLength", 0), schema.get("maxLength")
    if "pattern" in schema:
        drawn = st.from_regex(schema["pattern"], fullmatch=True)
    elif schema.get("format") == "date-time":
        drawn = st.datetimes().map(lambda d: d.isoformat() + "Z")
    elif schema.get("format") == "uri":
        drawn = st.sampled_from(("https://example.com/", "http://127.0.0.1:1/x", "file:///etc/passwd"))
    else:
        drawn = st.text(max_size=MAX_TEXT) | st.sampled_from(NASTY) | st.sampled_from(COMMON + words)
        if most is not None and most <= MAX_BOUND:  # at the bound, in one-byte and two-byte characters
            drawn |= st.sampled_from(("x" * most, "é" * most, "memory/global/" + "y" * max(0, most - 14)))
    return drawn.filter(lambda s: least <= len(s) and (most is None or len(s) <= most))
