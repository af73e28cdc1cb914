"""JSON and JSON Lines → YAML-like lines (`key: value`, `- item`) so that keys and values are both
searchable."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from cairn.domain.errors import InvalidInput

MAX_DEPTH = 100
"""Deeper values are refused: each level indents every line below it by two more spaces."""


def json_text(text: str, max_chars: int) -> tuple[str, str | None]:
    """(rendered text, title): a JSON value, else JSON Lines (records separated by a blank line).
    Text that would exceed `max_chars` once stripped is refused as soon as it does."""
    try:
        values: list[Any] = [_loads(text)]
    except json.JSONDecodeError as first_error:
        values = _json_lines(text, first_error)
    except RecursionError as exc:
        raise InvalidInput("JSON is nested too deeply") from exc
    rendered = _Text(max_chars)
    for number, value in enumerate(values):
        for index, line in enumerate(_lines(value)):
            rendered.add("\n\n" if number and not index else "\n", line)
    first = values[0] if values else None
    title = None
    if isinstance(first, dict):
        title = next((first[k] for k in ("title", "name") if isinstance(first.get(k), str)), None)
    return rendered.joined(), title


def _integer(literal: str) -> int | str:
    """An integer literal too long for int() (over sys.get_int_max_str_digits digits) stays its
    digits: still searchable, where json.loads would raise a plain ValueError."""
    try:
        return int(literal)
    except ValueError:
        return literal


def _loads(text: str) -> Any:
    return json.loads(text, parse_int=_integer)


def _json_lines(text: str, first_error: json.JSONDecodeError) -> list[Any]:
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 2:
        raise InvalidInput(f"invalid JSON: {first_error.msg} at line {first_error.lineno}") from first_error
    values = []
    for number, line in enumerate(lines, start=1):
        try:
            values.append(_loads(line))
        except RecursionError as exc:
            raise InvalidInput(f"JSON is nested too deeply (record {number})") from exc
        except json.JSONDecodeError:
            raise InvalidInput(
                f"invalid JSON: {first_error.msg} at line {first_error.lineno} "
                f"(and not JSON Lines: record {number} does not parse)"
            ) from first_error
    return values


class _Text:
    """Lines joined once at the end; refuses them as soon as the text, stripped, exceeds `max_chars`."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.parts: list[str] = []
        self.kept = 0
        """Characters of the text so far, stripped."""
        self.trailing = 0
        """Whitespace after the last non-whitespace character: counted once more text follows."""

    def add(self, separator: str, line: str) -> None:
        piece = separator + line if self.parts else line
        self.parts.append(piece)
        end = len(piece.rstrip())
        if not end:
            self.trailing += len(piece) if self.kept else 0
            return
        if self.kept:
            self.kept += self.trailing + end
        else:  # what came before was whitespace, which strip() drops
            self.kept = len(piece.strip())
        self.trailing = len(piece) - end
        if self.kept > self.max_chars:
            raise InvalidInput(f"extracted text exceeds {self.max_chars} characters")

    def joined(self) -> str:
        return "".join(self.parts)


def _nested(value: Any) -> bool:
    return isinstance(value, dict | list) and bool(value)


def _lines(value: Any) -> Iterator[str]:
    """A value's lines, depth first without recursion. A list item that is itself a non-empty list
    or object starts on its dash's line: `- key: value`, `- - item`."""
    if not _nested(value):
        yield _scalar(value)
        return
    # (entries left, indent, what the first line starts with when it continues a dash's line)
    stack: list[tuple[Iterator[Any], str, str | None]] = [(_entries(value), "", None)]
    while stack:
        entries, indent, lead = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        stack[-1] = (entries, indent, None)
        key, item = entry
        nested = _nested(item)
        if nested and len(stack) >= MAX_DEPTH:
            raise InvalidInput(f"JSON is nested too deeply (more than {MAX_DEPTH} levels)")
        if key is None and nested:  # its first line goes on after this item's dash
            stack.append((_entries(item), indent + "  ", f"{indent}- " if lead is None else lead + "- "))
            continue
        if key is None:
            line = f"{indent}- {_scalar(item)}"
        else:
            line = f"{indent}{key}:" if nested else f"{indent}{key}: {_scalar(item)}"
        yield line if lead is None else lead + line.lstrip()
        if nested:
            stack.append((_entries(item), indent + "  ", None))


def _entries(value: dict[str, Any] | list[Any]) -> Iterator[tuple[str | None, Any]]:
    """(key, item) of an object, (None, item) of a list."""
    return iter(value.items()) if isinstance(value, dict) else ((None, item) for item in value)


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return "{}" if isinstance(value, dict) else "[]"
    return json.dumps(value)
