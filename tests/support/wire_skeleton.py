"""Reply skeletons: a JSON value with every leaf replaced by its JSON type, for wire-conformance tests.

`skeleton(value)` makes one; `differences(expected, actual)` compares an expected skeleton with an
actual JSON value and lists what does not conform:

- every key of an expected object must be in the actual object, with a conforming value; extra
  actual keys are allowed;
- an expected object whose only key is "<id>" is a map keyed by ids: every actual value conforms
  to that key's skeleton;
- an expected list conforms by its first element: each actual element must conform to it; an
  expected empty list says nothing about the elements, and an expected non-empty list met by an
  empty actual one is a difference (the session is built so that the original sent an element);
- a leaf is "string", "number", "boolean" or "null"; several joined by "|" ("string|null") accept
  any of them, "object" or "array" among them any object or list, and "any" anything.

`resolve(args, saved)` fills a recorded call's arguments: a string `$name` is the value an earlier
call saved under that name, and `{"$repeat": n, "of": x}` is a list of n copies of x.

`extra_keys(expected, actual)` lists the actual keys an expected skeleton does not name, for a test
that allows extra keys only where they are documented.
"""

from __future__ import annotations

import json
from typing import Any

ID_KEY = "<id>"
ANY = "any"


def skeleton(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: skeleton(v) for k, v in value.items()}
    if isinstance(value, list):
        return [skeleton(value[0])] if value else []
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "string"


def differences(expected: Any, actual: Any, path: str = "$") -> list[str]:
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: an object is expected, got {_brief(actual)}"]
        if set(expected) == {ID_KEY}:
            return [
                d
                for key, value in actual.items()
                for d in differences(expected[ID_KEY], value, f"{path}.{key}")
            ]
        out: list[str] = []
        for key, want in expected.items():
            if key not in actual:
                out.append(f"{path}.{key}: missing ({_brief(want)} expected)")
            else:
                out += differences(want, actual[key], f"{path}.{key}")
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{path}: an array is expected, got {_brief(actual)}"]
        if not expected:
            return []
        if not actual:
            return [f"{path}: empty, where an element like {_brief(expected[0])} is expected"]
        return [d for i, item in enumerate(actual) for d in differences(expected[0], item, f"{path}[{i}]")]
    if not _leaf_conforms(expected, actual):
        return [f"{path}: {_brief(expected)} expected, got {_brief(skeleton(actual))}"]
    return []


def resolve(value: Any, saved: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$repeat", "of"}:
            return [resolve(value["of"], saved) for _ in range(value["$repeat"])]
        return {k: resolve(v, saved) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, saved) for v in value]
    if isinstance(value, str) and value.startswith("$"):
        return saved[value]
    return value


def _leaf_conforms(expected: Any, actual: Any) -> bool:
    allowed = str(expected).split("|") if isinstance(expected, str) else [expected]
    if ANY in allowed:
        return True
    if isinstance(actual, dict):
        return "object" in allowed
    if isinstance(actual, list):
        return "array" in allowed
    return skeleton(actual) in allowed


def extra_keys(expected: Any, actual: Any, path: str = "$") -> list[str]:
    """The paths of the keys of `actual`'s objects that `expected` does not name, where both hold an
    object there (lists by their elements, as `differences` compares them)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        if set(expected) == {ID_KEY}:
            return [
                e
                for key, value in actual.items()
                for e in extra_keys(expected[ID_KEY], value, f"{path}.{key}")
            ]
        out = [f"{path}.{key}" for key in actual if key not in expected]
        for key, want in expected.items():
            if key in actual:
                out += extra_keys(want, actual[key], f"{path}.{key}")
        return out
    if isinstance(expected, list) and isinstance(actual, list) and expected:
        return sorted({e for item in actual for e in extra_keys(expected[0], item, f"{path}[]")})
    return []


def _brief(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 80 else text[:77] + "..."
