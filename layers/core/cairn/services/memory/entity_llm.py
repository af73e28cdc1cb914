"""Entities by the configured language model, on top of the offline rules.

The Generator is asked for the entities a memory's text names, as one JSON array of
`{name, type, aliases?}` with types among ENTITY_TYPES. What comes back is checked and capped:
entries of an unknown type, without a name or with a name over MAX_NAME_CHARS are dropped,
aliases are cut the same way, and at most MAX_MENTIONS entries are kept.

The rules (entity_rules.py) run first and win: their names are precise. The model adds recall:
an entity the rules did not find, by name or alias, ignoring case. When the model fails, takes
longer than `timeout_s` or replies with anything but that JSON, the rules' mentions are all
there is and a warning names the failure, never the text: a store must not fail, nor leak a
memory into the log, because extraction did.

The offline extractive generator (`model_id` "extractive") synthesises nothing, so with it the
rules run alone (`entity_extractor_for`).
"""

from __future__ import annotations

import logging
from typing import Any, Final

from cairn.ports.generator import Generator, Passage
from cairn.services.memory.entities import (
    ENTITY_TYPES,
    MAX_MENTIONS,
    MAX_NAME_CHARS,
    EntityExtractor,
    Mention,
    clean_name,
    name_key,
)
from cairn.services.memory.entity_rules import RuleEntityExtractor
from cairn.services.memory.model_calls import complete, failure_reason, json_list, offline

TIMEOUT_S: Final = 20.0
MAX_TEXT_CHARS: Final = 12_000  # what the model is shown of a memory
MAX_ALIASES: Final = 10

PROMPT = f"""List the specific named entities that the memory below mentions.
Reply with one JSON array and nothing else, [] when there are none:
[{{"name": "the entity's full name", "type": one of {", ".join(f'"{t}"' for t in ENTITY_TYPES)},
  "aliases": ["another name the memory uses for it"]}}]
Types: client (a customer or organisation worked for), person, system, service, domain (a host
name), technology (a language, framework, database or tool), workflow, agent (an AI agent).
Only names that identify one thing; never generic words such as "the database" or "a meeting"."""

log = logging.getLogger(__name__)


class GeneratorEntityExtractor:
    """EntityExtractor: the rules' mentions, then the model's (see the module docstring)."""

    def __init__(
        self, generator: Generator, rules: EntityExtractor | None = None, *, timeout_s: float = TIMEOUT_S
    ) -> None:
        self.generator = generator
        self.rules = rules or RuleEntityExtractor()
        self.timeout_s = timeout_s

    def extract(self, text: str) -> list[Mention]:
        found = self.rules.extract(text)
        if not text.strip():
            return found
        try:
            passage = Passage("memory", "memory", text[:MAX_TEXT_CHARS])
            answer = complete(self.generator, PROMPT, [passage], timeout_s=self.timeout_s)
            suggested = mentions_from_reply(answer.text)
        except Exception as exc:  # any failure of the model leaves the rules' mentions
            log.warning(
                "entity extraction by the model failed (%s); the rules' entities are kept",
                failure_reason(exc),
            )
            return found
        return merged(found, suggested)


def entity_extractor_for(generator: Generator) -> EntityExtractor:
    """The rules alone with the offline extractive generator, else the rules and the model."""
    if offline(generator):
        return RuleEntityExtractor()
    return GeneratorEntityExtractor(generator, RuleEntityExtractor())


def merged(rules: list[Mention], model: list[Mention]) -> list[Mention]:
    """The rules' mentions, then the model's whose name and aliases the rules do not already
    hold (ignoring case); a model alias another mention holds is dropped."""
    taken = {name_key(n) for m in rules for n in (m.name, *m.aliases)}
    out = list(rules)
    for m in model:
        if name_key(m.name) in taken:
            continue
        taken.add(name_key(m.name))
        aliases = tuple(a for a in m.aliases if name_key(a) not in taken)
        taken.update(name_key(a) for a in aliases)
        out.append(Mention(m.name, m.type, aliases=aliases))
    return out


def mentions_from_reply(reply: str) -> list[Mention]:
    """The valid entries of the model's JSON array (a fenced block, or an object holding the
    array under `entities`, too), at most MAX_MENTIONS; ReplyInvalid when there is no array."""
    items = json_list(reply, "entities")
    out: dict[str, Mention] = {}
    for item in items:
        if len(out) == MAX_MENTIONS:
            break
        if not isinstance(item, dict):
            continue
        name, kind = _name(item.get("name")), item.get("type")
        if name is None or kind not in ENTITY_TYPES or name_key(name) in out:
            continue
        raw = item.get("aliases")
        aliases = [a for a in map(_name, raw if isinstance(raw, list) else []) if a is not None]
        kept: dict[str, str] = {}
        for alias in aliases:
            if name_key(alias) != name_key(name):
                kept.setdefault(name_key(alias), alias)
        out[name_key(name)] = Mention(name, str(kind), aliases=tuple(kept.values())[:MAX_ALIASES])
    return list(out.values())


def _name(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    name = clean_name(value)
    return name if 0 < len(name) <= MAX_NAME_CHARS else None
