"""Brain listings: `list` returns every brain the caller may read; `page` pages them honestly."""

from __future__ import annotations

import pytest

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from cairn.bootstrap import Container
from cairn.domain.errors import InvalidInput
from cairn.domain.models import Brain
from cairn.services.brains import MAX_PAGE


def _pages(container: Container, limit: int) -> list[list[Brain]]:
    pages: list[list[Brain]] = []
    cursor: str | None = None
    while True:
        brains, cursor = container.brains.page(limit=limit, cursor=cursor)
        pages.append(brains)
        if cursor is None:
            return pages


def test_list_returns_every_brain_beyond_one_page(container: Container) -> None:
    created = [container.brains.create(f"Brain {i}").slug for i in range(MAX_PAGE + 5)]
    assert [b.slug for b in container.brains.list()] == created


def test_pages_hold_every_brain_once_in_creation_order(container: Container) -> None:
    created = [container.brains.create(f"Brain {i}").slug for i in range(7)]
    pages = _pages(container, 2)
    assert [[b.slug for b in page] for page in pages] == [
        created[0:2],
        created[2:4],
        created[4:6],
        created[6:],
    ]
    # a listing that fits its page has no cursor
    assert container.brains.page(limit=7) == (container.brains.list(), None)


def test_pages_stay_full_when_the_caller_may_read_only_some_brains(container: Container) -> None:
    # Given 12 brains of which an API key may read every third one
    brains = [container.brains.create(f"Brain {i}") for i in range(12)]
    allowed = brains[::3]
    key = Principal("local", "key:k", frozenset({READ}), Via.api_key, frozenset(b.id for b in allowed))
    with access.acting_as(key, READ):
        # When it pages two at a time
        pages = _pages(container, 2)
        # Then each page is full, none shows another brain, and the last has no successor
        assert [[b.id for b in page] for page in pages] == [
            [b.id for b in allowed[:2]],
            [b.id for b in allowed[2:]],
        ]
        assert container.brains.list() == allowed


@pytest.mark.parametrize("cursor", ["nope!", "YnJuX3g=", "eHh4", ""])
def test_cursors_not_handed_out_are_refused(container: Container, cursor: str) -> None:
    container.brains.create("One")
    with pytest.raises(InvalidInput, match="cursor"):
        container.brains.page(limit=1, cursor=cursor)


@pytest.mark.parametrize("limit", [0, MAX_PAGE + 1])
def test_page_sizes_out_of_range_are_refused(container: Container, limit: int) -> None:
    with pytest.raises(InvalidInput, match="limit"):
        container.brains.page(limit=limit)


def test_a_request_reads_its_brains_once_and_what_it_writes_again(
    container: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Within one request (one access), the pointer partitions are read once however often the
    caller's brains are listed; a brain the request makes or changes is listed as it is now."""
    records = container.adapters.records
    queried: list[str] = []
    query = records.query

    def counted(pk: str, *args: object, **kwargs: object) -> object:
        queried.append(pk)
        return query(pk, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(records, "query", counted)
    first = container.brains.create("First", visibility="tenant")
    admin = Principal("local", "alice", frozenset({READ, WRITE, ADMIN}), Via.jwt)
    with access.acting_as(admin, READ):
        assert [b.slug for b in container.brains.list()] == ["first"]
        assert [b.slug for b in container.brains.own()] == ["first"]
        assert container.brains.page(limit=1) == ([first], None)
        read = len(queried)
        assert container.brains.resolve(None) == first
        assert len(queried) == read  # no partition read again
        second = container.brains.create("Second")
        assert [b.slug for b in container.brains.list()] == ["first", "second"]
        container.brains.update(second.slug, owner="bob")  # alice's no more: private to bob
        assert [b.slug for b in container.brains.list()] == ["first"]
    with access.acting_as(admin, READ):  # the next request reads them again
        read = len(queried)
        assert [b.slug for b in container.brains.list()] == ["first"]
        assert len(queried) > read


def test_a_job_lists_its_brains_as_they_are_now(container: Container) -> None:
    """A job keeps no listing (it may run long, `on_behalf_of`): a brain made private to another
    owner while it runs is not listed to it again, though it read the brain before."""
    shared = container.brains.create("Shared", visibility="tenant")
    container.brains.create("Kept", visibility="tenant")
    with access.on_behalf_of("local/alice"):
        assert [b.slug for b in container.brains.list()] == ["shared", "kept"]
        with access.as_system():  # another request, meanwhile
            container.brains.update(shared.slug, visibility="private")  # local's, not alice's
        assert [b.slug for b in container.brains.list()] == ["kept"]
