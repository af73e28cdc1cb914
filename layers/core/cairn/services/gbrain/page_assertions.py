"""Pages' assertions and contradictions for gbrain's brain_check and brain_stats: the offline rules
(services/gbrain/assertions.py), plus the configured language model's assertions when there is one.

The model is asked once per page version: its assertions are kept in one record item per page,
stamped with the page's version and the model's id, and asked again only when either changes.

| item                    | pk                       | sk              |
|-------------------------|--------------------------|-----------------|
| a page's model claims   | `assertions#<brain_id>`  | `<document id>` |

A check asks the model about at most `model_pages_per_check` pages whose claims are missing or
stale (the focus page first); the other pages count with their rules' assertions and whatever
the model said of an earlier version is not used. Successive checks fill the rest in. Stats
never call the model; they count what is kept. A model that fails, times out or replies with
anything but the JSON asked for leaves the rules' assertions, and a warning names the failure,
never the page. The rules win ties: a model claim repeating one of theirs (subject, attribute and
value, ignoring case) is dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

from cairn.ports.generator import Generator, Passage
from cairn.ports.records import Item, RecordStore
from cairn.services.gbrain import assertions
from cairn.services.gbrain.assertions import AssertedPage, Assertion, Contradiction
from cairn.services.memory.model_calls import complete, failure_reason, json_list, offline
from cairn.services.repositories import get_all

MODEL_EVIDENCE: Final = "model"
MAX_PAGE_CHARS: Final = 12_000
MAX_MODEL_ASSERTIONS: Final = 50
TIMEOUT_S: Final = 30.0
MODEL_PAGES_PER_CHECK: Final = 20

PROMPT = """List the factual claims the page below makes about named things, as subject-attribute-value
triples. Reply with one JSON array and nothing else, [] when there are none:
[{"subject": "the named person, organisation or thing", "attribute": "a short property name such as
role, employer, founded, location, status", "value": "its value, at most eight words"}]
Only claims the page states as current fact; never opinions, plans or questions."""

log = logging.getLogger(__name__)


class PageAssertions:
    def __init__(
        self,
        records: RecordStore,
        generator: Generator,
        *,
        model_pages_per_check: int = MODEL_PAGES_PER_CHECK,
        timeout_s: float = TIMEOUT_S,
    ) -> None:
        self.records = records
        self.generator = generator
        self.model_pages_per_check = model_pages_per_check
        self.timeout_s = timeout_s

    def forget(self, brain_id: str, doc_ids: set[str]) -> int:
        """Drop the model's claims read from these documents (an erasure); how many there were."""
        held = get_all(self.records, [(assertions_pk(brain_id), doc_id) for doc_id in sorted(doc_ids)])
        return sum(self.records.delete(pk, sk) for pk, sk in held)  # only those held: read in batches

    @property
    def uses_model(self) -> bool:
        return not offline(self.generator)

    def contradictions(
        self, pages: Sequence[AssertedPage], *, focus: str | None = None
    ) -> list[Contradiction]:
        """What brain_check reports: conflicts between pages (touching `focus` when given)."""
        claims = self._claims(pages, asking=self.model_pages_per_check, first=focus)
        return assertions.contradictions(pages, focus=focus, extract=lambda page: claims[page.slug])

    def stats(self, pages: Sequence[AssertedPage]) -> tuple[int, int]:
        """(assertion count, contradiction count) from the rules and the kept model claims."""
        claims = self._claims(pages, asking=0)
        found = assertions.contradictions(pages, extract=lambda page: claims[page.slug])
        return sum(len(c) for c in claims.values()), len(found)

    def _claims(
        self, pages: Sequence[AssertedPage], *, asking: int, first: str | None = None
    ) -> dict[str, list[Assertion]]:
        """Each page's assertions by slug: the rules', plus the model's kept for its version, or
        asked now for at most `asking` pages (`first` before the others)."""
        rules = {page.slug: assertions.extract(page.text, page.subject) for page in pages}
        modelled = [page for page in pages if page.document_id] if self.uses_model else []
        if not modelled:
            return rules
        kept = self.records.get_many([(assertions_pk(page.brain_id), page.document_id) for page in modelled])
        for page in sorted(modelled, key=lambda p: p.slug != first):
            item = kept.get((assertions_pk(page.brain_id), page.document_id))
            found = self._current(item, page)
            if found is None and asking > 0:
                asking -= 1
                found = self._ask(page)
            rules[page.slug] = assertions.merged(rules[page.slug], found or [])
        return rules

    def _current(self, item: Item | None, page: AssertedPage) -> list[Assertion] | None:
        """The kept claims when they are of this version of the page and of this model."""
        if item is None or item.data.get("version") != page.version:
            return None
        if item.data.get("model") != self.generator.model_id:
            return None
        return [Assertion(s, a, v, MODEL_EVIDENCE) for s, a, v in item.data.get("claims", [])]

    def _ask(self, page: AssertedPage) -> list[Assertion] | None:
        passage = Passage(page.slug, page.document_id, assertions.page_source(page.text)[:MAX_PAGE_CHARS])
        try:
            answer = complete(self.generator, PROMPT, [passage], timeout_s=self.timeout_s)
            found = claims_from_reply(answer.text, page.subject)
        except Exception as exc:  # any failure of the model leaves the rules' assertions
            why = failure_reason(exc)
            log.warning("assertion extraction by the model failed (%s); the rules' assertions are kept", why)
            return None
        data: dict[str, Any] = {
            "version": page.version,
            "model": self.generator.model_id,
            "claims": [[c.subject, c.attribute, c.value] for c in found],
        }
        self.records.put(Item(assertions_pk(page.brain_id), page.document_id, data))
        return found


def claims_from_reply(reply: str, subject: str) -> list[Assertion]:
    """The valid triples of the model's JSON array (or an object's `assertions`), at most
    MAX_MODEL_ASSERTIONS, normalised as the rules normalise theirs; a triple without a subject
    is about the page's own subject."""
    out: list[Assertion] = []
    for entry in json_list(reply, "assertions"):
        if len(out) == MAX_MODEL_ASSERTIONS:
            break
        if not isinstance(entry, dict):
            continue
        named, attribute, value = (entry.get(k) for k in ("subject", "attribute", "value"))
        if not isinstance(attribute, str) or not isinstance(value, str):
            continue
        about = named if isinstance(named, str) and named.strip() else subject
        claim = assertions.claim(about, attribute, value)
        if claim is not None:
            out.append(Assertion(claim[0], claim[1], claim[2], MODEL_EVIDENCE))
    return out


def assertions_pk(brain_id: str) -> str:
    """The partition of a brain's model-read page assertions."""
    return f"assertions#{brain_id}"
