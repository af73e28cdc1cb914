"""Searching the past through the shared search (services/search/as_of.py), on every record store:
`valid_at` finds what was true then, `known_at` what Cairn held then (recorded by then, superseded
or not as of then), both together what Cairn then held to be true at that other time; REST
search's `valid_at` and `known_at` ask it, and refuse what is not a moment."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from cairn.bootstrap import Container
from cairn.domain.models import Brain, Document, MemoryType
from cairn.entrypoints.http import create_app
from cairn.services.memory.memory_model import MemoryInput, MemoryQuery
from cairn.services.search.as_of import AsOf
from tests.fakes.clock import FakeClock
from tests.integration.memory.conftest import START, superseded_line
from tests.integration.rest.helpers import assert_problem

QUESTION = "where does the Acme database live"
CITIES = ("Frankfurt", "Dublin", "Oslo")


def _year(year: int, month: int = 1) -> datetime:
    return datetime(year, month, 1, tzinfo=UTC)


def _seed(container: Container, brain: Brain, clock: FakeClock) -> None:
    """Frankfurt valid from 2024 (recorded on day 1), Dublin from 2025 (day 10), Oslo from 2026
    (day 20), each superseding the last; a note with no validity written on day 0."""
    clock.current = START
    container.documents.write(brain, "notes/acme.md", b"# Acme\n\nThe Acme database team meets on Mondays.")
    for day, year, city in ((1, 2024, "Frankfurt"), (10, 2025, "Dublin"), (20, 2026, "Oslo")):
        clock.current = START + timedelta(days=day)
        container.memories.store(
            brain,
            MemoryInput(
                type=MemoryType.fact,
                key="acme-db",
                content=f"the Acme database lives in {city}",
                valid_from=_year(year),
            ),
        )
    clock.current = START + timedelta(days=30)


def _city(container: Container, brain: Brain, city: str, began: datetime | None, **more: object) -> Document:
    """The acme-db fact naming `city`, valid from `began` (and `more`: valid_to, client_id)."""
    fact = MemoryInput(
        type=MemoryType.fact,
        key="acme-db",
        content=f"the Acme database lives in {city}",
        valid_from=began,
        **more,  # type: ignore[arg-type]
    )
    return container.memories.store(brain, fact).memory


def _named(content: str) -> str:
    """The city a hit names, or `note` for the note."""
    return next((c for c in CITIES if c in content), "note")


def _found(container: Container, brain: Brain, as_of: AsOf | None = None) -> list[str]:
    """The cities among the hits, and `note` for the note, in the order found."""
    hits = container.search.search(brain, QUESTION, as_of=as_of, count_access=False).hits
    return [_named(h.content) for h in hits]


def _cities(found: list[str]) -> list[str]:
    return [f for f in found if f != "note"]


def test_valid_at_finds_what_was_true_then(container: Container, brain: Brain, clock: FakeClock) -> None:
    _seed(container, brain, clock)

    assert _cities(_found(container, brain)) == ["Oslo"]  # a plain search: what is true now
    assert _cities(_found(container, brain, AsOf(valid_at=_year(2024, 6)))) == ["Frankfurt"]
    assert _cities(_found(container, brain, AsOf(valid_at=_year(2025, 6)))) == ["Dublin"]
    assert _cities(_found(container, brain, AsOf(valid_at=_year(2026, 2)))) == ["Oslo"]
    assert _cities(_found(container, brain, AsOf(valid_at=_year(2023)))) == []  # nothing stated yet
    assert "note" in _found(container, brain, AsOf(valid_at=_year(2023)))  # no validity: always


def test_known_at_finds_what_cairn_held_then(container: Container, brain: Brain, clock: FakeClock) -> None:
    _seed(container, brain, clock)

    def held(day: float, **kw: datetime) -> list[str]:
        return _found(container, brain, AsOf(known_at=START + timedelta(days=day), **kw))

    assert held(-1) == []  # nothing recorded yet, the note neither
    assert held(0.5) == ["note"]
    assert _cities(held(5)) == ["Frankfurt"]
    assert _cities(held(15)) == ["Dublin"]  # Frankfurt was superseded on day 10
    assert _cities(held(25)) == ["Oslo"]
    # on day 15 Cairn held Dublin true from 2025 with no end, so true in 2026 as well
    assert _cities(held(15, valid_at=_year(2026, 2))) == ["Dublin"]
    assert _cities(held(15, valid_at=_year(2024, 6))) == ["Frankfurt"]
    assert _cities(held(25, valid_at=_year(2026, 2))) == ["Oslo"]


def test_what_cairn_held_then_keeps_the_end_it_then_had(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    """A value stored with its own end, superseded later by one that begins after that end: asked
    as Cairn held it before the supersession, it still ends at its own end, and is shown so."""
    clock.current = START
    first = _city(container, brain, "Frankfurt", _year(2024), valid_to=_year(2025))
    before = START + timedelta(days=5)
    clock.current = START + timedelta(days=10)
    _city(container, brain, "Oslo", _year(2026))
    clock.current = START + timedelta(days=30)

    assert _cities(_found(container, brain, AsOf(known_at=before, valid_at=_year(2025, 6)))) == []
    assert _cities(_found(container, brain, AsOf(known_at=before, valid_at=_year(2024, 6)))) == ["Frankfurt"]
    hits = container.memories.search(brain, QUESTION, MemoryQuery(known_at=before, count_access=False))
    shown = next(h.memory.memory for h in hits if h.memory.id == first.id)
    assert shown is not None
    assert (shown.valid_to, shown.superseded_by) == (_year(2025), None)
    # now: superseded, and still ending at its own end
    now = container.memories.record(brain, first.id).memory
    assert now is not None and now.superseded_by is not None and now.valid_to == _year(2025)


def test_a_value_written_while_a_change_is_scheduled_ends_the_value_before_it(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    """Frankfurt from 2024, Oslo scheduled for 2030, then Dublin with no start (true from now until
    Oslo begins): Frankfurt ends where Dublin begins, so no two values are true at once, whatever
    a filter leaves out."""
    clock.current = datetime(2026, 6, 1, tzinfo=UTC)
    for city, began, client in (
        ("Frankfurt", _year(2024), "acme"),
        ("Oslo", _year(2030), "acme"),
        ("Dublin", None, "globex"),
    ):
        _city(container, brain, city, began, client_id=client)
    clock.current = datetime(2026, 7, 1, tzinfo=UTC)
    assert _cities(_found(container, brain, AsOf(valid_at=_year(2027)))) == ["Dublin"]
    assert _cities(_found(container, brain, AsOf(valid_at=_year(2025)))) == ["Frankfurt"]
    assert _cities(_found(container, brain, AsOf(valid_at=_year(2031)))) == ["Oslo"]
    acme = MemoryQuery(client_ids=("acme",), at_time=_year(2027), count_access=False)
    assert [_named(h.text) for h in container.memories.search(brain, QUESTION, acme)] == []


def test_what_cairn_held_then_is_shown_with_the_ends_and_links_it_then_had(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    """Frankfurt from 2024 (day 1), Oslo from 2026 (day 10), then Dublin from 2025 stored as their
    history (day 20): asked as Cairn held them on day 15, Frankfurt ends in 2026 and Oslo follows
    it, whatever the line learnt on day 20 (the answer showed Frankfurt ending in 2025 and linked
    both to Dublin, a value Cairn did not hold yet)."""
    stored = {}
    for day, city, year in ((1, "Frankfurt", 2024), (10, "Oslo", 2026), (20, "Dublin", 2025)):
        clock.current = START + timedelta(days=day)
        stored[city] = _city(container, brain, city, _year(year))
    clock.current = START + timedelta(days=30)
    frankfurt, oslo, dublin = (stored[c].id for c in ("Frankfurt", "Oslo", "Dublin"))

    def shown(day: int, **kw: object) -> dict[str, Document]:
        q = MemoryQuery(known_at=START + timedelta(days=day), count_access=False, **kw)  # type: ignore[arg-type]
        return {h.memory.id: h.memory for h in container.memories.search(brain, QUESTION, q)}

    then = shown(15, include_superseded=True)
    assert sorted(then) == sorted([frankfurt, oslo])
    held = then[frankfurt].memory
    assert held is not None and (held.valid_to, held.superseded_by) == (_year(2026), oslo)
    assert then[oslo].metadata.get("supersedes") == frankfurt
    held = shown(15, at_time=_year(2025, 6))[frankfurt].memory  # then held true in mid-2025
    assert held is not None and (held.valid_to, held.superseded_by) == (_year(2026), oslo)
    now = shown(25, include_superseded=True)  # as the line is now
    held = now[frankfurt].memory
    assert held is not None and (held.valid_to, held.superseded_by) == (_year(2025), dublin)
    assert now[oslo].metadata.get("supersedes") == dublin
    # REST search shows the records as held then too
    day_15 = (START + timedelta(days=15)).isoformat()
    with TestClient(create_app(container), base_url="http://localhost") as client:
        body = {"query": QUESTION, "known_at": day_15}
        hits = client.post(f"/v1/brains/{brain.id}/search", json=body).json()["hits"]
    assert [h["metadata"].get("supersedes") for h in hits if "Oslo" in h["content"]] == [frankfurt]


def test_a_successor_cairn_did_not_hold_then_is_not_shown(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    """Dublin superseded by Oslo (day 10), Oslo deleted (day 20), Paris stored after Dublin (day
    30): as held on day 25, Dublin was superseded (by a value deleted since) and ended in 2026;
    Paris, stored later, is not shown as its successor."""
    clock.current = START + timedelta(days=1)
    dublin = _city(container, brain, "Dublin", _year(2025))
    clock.current = START + timedelta(days=10)
    oslo = _city(container, brain, "Oslo", _year(2026))
    clock.current = START + timedelta(days=20)
    container.memories.delete(brain, oslo.id)
    clock.current = START + timedelta(days=30)
    paris = container.memories.store(
        brain,
        MemoryInput(
            type=MemoryType.fact, key="acme-db", content="Acme moved to Paris", valid_from=_year(2025, 6)
        ),
    ).memory
    q = MemoryQuery(known_at=START + timedelta(days=25), include_superseded=True, count_access=False)
    hits = {h.memory.id: h.memory for h in container.memories.search(brain, QUESTION, q)}
    held = hits[dublin.id].memory
    assert held is not None and (held.valid_to, held.superseded_by) == (_year(2026), None)
    assert held.superseded_at is not None  # superseded then, by a value deleted since
    now = container.memories.record(brain, dublin.id).memory
    assert now is not None and (now.valid_to, now.superseded_by) == (_year(2025, 6), paris.id)


def test_text_written_since_is_not_what_cairn_knew_then(
    container: Container, brain: Brain, clock: FakeClock
) -> None:
    """A note written again, or a memory whose text an update changed in place, after `known_at`:
    Cairn then held other text, which it no longer has, so neither answers for then."""
    clock.current = START
    container.documents.write(brain, "notes/db.md", b"# DB\n\nThe Acme database lives in Frankfurt.")
    stored = container.memories.store(
        brain, MemoryInput(type=MemoryType.event, content="the Acme database lives in Dublin")
    ).memory
    then = START + timedelta(days=1)
    clock.current = START + timedelta(days=2)
    assert sorted(_found(container, brain, AsOf(known_at=then))) == ["Dublin", "Frankfurt"]
    container.documents.write(brain, "notes/db.md", b"# DB\n\nThe Acme database lives in Oslo.")
    container.memories.update(brain, stored.id, importance=0.9)  # not its text: still held then
    assert sorted(_found(container, brain, AsOf(known_at=then))) == ["Dublin"]
    container.memories.update(brain, stored.id, content="the Acme database lives in Oslo, said Bo")
    assert _found(container, brain, AsOf(known_at=then)) == []
    assert _found(container, brain, AsOf(known_at=clock.current)) == ["Oslo", "Oslo"]


def test_known_at_looks_past_many_values_superseded_by_then(
    container: Container, brain: Brain, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a search's first pool of 10 candidates (100 by default: 130 values took a minute
    # to store on DynamoDB under moto), and 13 superseded values, more than that first pool, that
    # match the question better
    search = container.search
    monkeypatch.setattr(search, "tuning", replace(search.tuning, candidate_pool=10))
    superseded_line(container, brain, clock, 13, "the Acme database lives in rack")
    # Then what Cairn held then is found however deep the index ranks it
    hits = container.search.search(
        brain, "the Acme database lives in rack", top_k=1, as_of=AsOf(known_at=clock.current)
    ).hits
    assert [h.content for h in hits] == ["Acme moved its Postgres to Oslo"]


def test_a_search_in_the_past_reads_its_hits_records_once(
    container: Container, brain: Brain, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the values and the note, and the document reads a search makes counted
    _seed(container, brain, clock)
    repo = container.search.docs
    reads = {"by_location": 0, "by_id": 0}
    by_location, by_id = repo.get_many, repo.get_many_by_id

    def get_many(locations: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Document]:
        reads["by_location"] += 1
        return by_location(locations)

    def get_many_by_id(doc_ids: Iterable[str]) -> dict[str, Document]:
        reads["by_id"] += 1
        return by_id(doc_ids)

    monkeypatch.setattr(repo, "get_many", get_many)
    monkeypatch.setattr(repo, "get_many_by_id", get_many_by_id)
    # When the past is searched
    past = AsOf(valid_at=_year(2025, 6))
    hits = container.search.search(brain, QUESTION, as_of=past, count_access=False).hits
    # Then the records read to judge the hits are the ones they are shaped from (no read by path
    # besides the one by id makes), and each hit still carries its document's title and metadata
    assert reads == {"by_location": 1, "by_id": 1}
    dublin = next(h for h in hits if "Dublin" in h.content)
    stored = container.documents.get_by_id(brain, dublin.document_id)
    assert (dublin.path, dublin.title) == (stored.path, stored.title)
    assert dublin.metadata == stored.metadata


def _rest(client: TestClient, brain: Brain, **moment: str) -> list[str]:
    response = client.post(f"/v1/brains/{brain.id}/search", json={"query": QUESTION, **moment})
    assert response.status_code == 200, response.text
    return _cities([_named(h["content"]) for h in response.json()["hits"]])


def _ui(client: TestClient, brain: Brain, **moment: str) -> list[str]:
    page = client.get(f"/ui/brains/{brain.slug}/search", params={"q": QUESTION, **moment})
    assert page.status_code == 200, page.text
    return [c for c in CITIES if f"lives in {c}" in page.text]


@pytest.mark.parametrize("ask", [_rest, _ui], ids=["rest", "ui"])
def test_rest_search_and_the_ui_ask_the_past(
    container: Container, brain: Brain, clock: FakeClock, ask: Callable[..., list[str]]
) -> None:
    _seed(container, brain, clock)
    day_5, day_15 = ((START + timedelta(days=d)).isoformat() for d in (5, 15))
    with TestClient(create_app(container), base_url="http://localhost") as client:
        assert ask(client, brain) == ["Oslo"]
        assert ask(client, brain, valid_at="2025-06-01") == ["Dublin"]  # no offset: UTC
        assert ask(client, brain, valid_at="2024-12-31T23:30:00-01:00") == ["Dublin"]  # 2025 in UTC
        assert ask(client, brain, known_at=day_5) == ["Frankfurt"]
        assert ask(client, brain, known_at=day_15, valid_at="2026-02-01T00:00:00Z") == ["Dublin"]


def test_what_is_not_a_moment_is_refused(container: Container, brain: Brain) -> None:
    with TestClient(create_app(container), base_url="http://localhost") as client:
        for bad in ({"valid_at": "yesterday-ish"}, {"known_at": 5}, {"known_at": ""}):
            body = {"query": QUESTION, **bad}
            assert_problem(client.post(f"/v1/brains/{brain.id}/search", json=body), 400, "validation_error")
        asked = {"q": QUESTION, "valid_at": "last spring"}
        page = client.get(f"/ui/brains/{brain.slug}/search", params=asked)
        assert page.status_code == 400 and "valid_at must be a date" in page.text


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_the_past_is_asked_in_the_openapi_document(container: Container) -> None:
    with TestClient(create_app(container), base_url="http://localhost") as client:
        schema = client.get("/openapi.json").json()["components"]["schemas"]["SearchBody"]
    for name in ("valid_at", "known_at"):
        field = schema["properties"][name]
        assert {"type": "string", "format": "date-time"} in field["anyOf"]
        assert "ISO 8601" in field["description"]
