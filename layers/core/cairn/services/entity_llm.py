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

import json
import logging
import re
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

import anyio
import anyio.from_thread

from cairn.ports.generator import Answer, GenerationError, Generator, Passage
from cairn.services.entities import (
    ENTITY_TYPES,
    MAX_MENTIONS,
    MAX_NAME_CHARS,
    EntityExtractor,
    Mention,
    clean_name,
    name_key,
)
from cairn.services.entity_rules import RuleEntityExtractor

EXTRACTIVE: Final = "extractive"
"""The offline generator's model id (as in memory_reflection.py)."""
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
T = TypeVar("T")


class ReplyInvalid(Exception):
    """The model's reply is not a JSON array of entities."""


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
            answer = _wait(self._ask, text[:MAX_TEXT_CHARS])
            suggested = mentions_from_reply(answer.text)
        except Exception as exc:  # any failure of the model leaves the rules' mentions
            log.warning("entity extraction by the model failed (%s); the rules' entities are kept", _why(exc))
            return found
        return merged(found, suggested)

    async def _ask(self, text: str) -> Answer:
        with anyio.fail_after(self.timeout_s):
            return await self.generator.complete(PROMPT, [Passage("memory", "memory", text)])


def entity_extractor_for(generator: Generator) -> EntityExtractor:
    """The rules alone with the offline extractive generator, else the rules and the model."""
    if generator.model_id == EXTRACTIVE:
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
    items = _array(reply)
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


def _array(reply: str) -> list[Any]:
    text = reply.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.S)
    if fenced:
        text = fenced.group(1)
    value: Any
    try:
        value = json.loads(text)
    except ValueError:
        start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
        if start < 0:
            raise ReplyInvalid("no JSON in the reply") from None
        try:
            value, _ = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            raise ReplyInvalid("the reply is not valid JSON") from None
    if isinstance(value, dict):
        value = value.get("entities")
    if not isinstance(value, list):
        raise ReplyInvalid("the reply is not a JSON array")
    return value


def _why(exc: Exception) -> str:
    """What failed, without anything the message could quote from the memory or the reply."""
    if isinstance(exc, GenerationError):
        return f"GenerationError {exc.code}"
    if isinstance(exc, TimeoutError):
        return "no reply in time"
    if isinstance(exc, ReplyInvalid):
        return str(exc)
    return type(exc).__name__


def _wait(fn: Callable[[str], Coroutine[Any, Any, T]], arg: str) -> T:
    """Run the coroutine from a service thread: on the caller's event loop when the thread is
    one of its workers (HTTP routes, MCP tools), else on a loop of its own (jobs, the CLI)."""
    try:
        return anyio.from_thread.run(fn, arg)
    except anyio.NoEventLoopError:
        return anyio.run(fn, arg)
