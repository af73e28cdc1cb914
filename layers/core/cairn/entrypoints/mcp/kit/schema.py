"""Input schemas as tools/list advertises them: pydantic's JSON Schema, cleaned."""

from __future__ import annotations

from typing import Any


def clean_schema(
    schema: dict[str, Any], defs: dict[str, Any] | None = None, *, nullable: bool = False
) -> dict[str, Any]:
    """Drop pydantic's `title`s, inline `$defs` references (the seeds spell nested objects out),
    and turn `anyOf [T, null]` with `default: null` (an optional Python argument) into plain `T`:
    optional means "may be omitted", as in the seeds. With `nullable` (a surface whose real server
    is a Python one advertising `T | None = None` as such) those stay as pydantic writes them."""
    defs = {**(defs or {}), **schema.get("$defs", {})}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
        schema = {**defs[ref[8:]], **{k: v for k, v in schema.items() if k != "$ref"}}
    out = {k: v for k, v in schema.items() if k not in ("title", "$defs")}
    if "properties" in out:
        out["properties"] = {
            name: _clean_property(prop, defs, nullable) for name, prop in out["properties"].items()
        }
    if "items" in out and isinstance(out["items"], dict):
        out["items"] = clean_schema(out["items"], defs, nullable=nullable)
    if "anyOf" in out and isinstance(out["anyOf"], list):
        out["anyOf"] = [clean_schema(arm, defs, nullable=nullable) for arm in out["anyOf"]]
    return out


def _clean_property(prop: dict[str, Any], defs: dict[str, Any], nullable: bool) -> dict[str, Any]:
    arms = prop.get("anyOf")
    if not nullable and isinstance(arms, list) and prop.get("default", ...) is None:
        kept = [a for a in arms if a != {"type": "null"}]
        if len(kept) == 1:
            rest = {k: v for k, v in prop.items() if k not in ("anyOf", "default")}
            prop = {**kept[0], **rest}
    return clean_schema(prop, defs, nullable=nullable)
