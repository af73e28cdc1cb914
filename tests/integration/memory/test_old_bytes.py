"""A replaced version's bytes (services/documents/old_bytes.py), on every record store: kept for
the grace a reader of the older record may need, then removed by the sweep with their record; the
bytes a record names are never removed, even when a later write returns to the same bytes; a
hard erase and a brain's deletion leave no record of old bytes behind."""

from __future__ import annotations

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.services.documents.index_sweeper import IndexSweeper

PATH = "notes/log.md"
VERSIONS = (b"# Log\n\nfirst line\n", b"# Log\n\nfirst line\nsecond line\n", b"# Log\n\nfirst line\n")


def _old_records(container: Container) -> list[object]:
    return list(container.documents.repo.old_bytes.due(older_than_s=-1.0))


def test_replaced_bytes_stay_for_the_grace_then_go(container: Container, brain: Brain) -> None:
    # Given three versions, the third the same bytes as the first
    keys = [container.documents.write(brain, PATH, data).document.blob_key for data in VERSIONS]
    blobs = container.adapters.blobs
    assert len(set(keys)) == 3 and len(_old_records(container)) == 2

    # Then within the grace nothing goes: a reader of an older record still reads its bytes
    assert IndexSweeper(container.documents).tick() == 0 and all(blobs.exists(k) for k in keys)
    assert container.documents.collect_old_bytes() == 0

    # And past it the replaced versions go with their records, the current one stays
    assert container.documents.collect_old_bytes(older_than_s=0) == 2
    assert [blobs.exists(k) for k in keys] == [False, False, True]
    assert container.documents.read(brain, PATH) == VERSIONS[2] and _old_records(container) == []


def test_the_bytes_a_record_names_are_never_collected(container: Container, brain: Brain) -> None:
    first = container.documents.write(brain, PATH, VERSIONS[0]).document
    container.documents.write(brain, PATH, VERSIONS[1])
    # a record of old bytes naming what the record names now (as a write racing the sweep could)
    repo = container.documents.repo
    now = repo.get_by_id(first.id)
    assert now is not None
    repo.records.transact([repo.old_bytes.put_op(brain.id, now.id, now.blob_key)])

    container.documents.collect_old_bytes(older_than_s=0)

    assert container.documents.read(brain, PATH) == VERSIONS[1] and _old_records(container) == []


def test_a_hard_erase_and_a_brains_deletion_leave_no_record_of_old_bytes(
    container: Container, brain: Brain
) -> None:
    for data in VERSIONS[:2]:
        container.documents.write(brain, PATH, data)
        container.documents.write(brain, "notes/other.md", data)
    assert len(_old_records(container)) == 2

    erased = container.documents.erase(brain, PATH)
    assert erased is not None and erased.blobs == 2 and len(_old_records(container)) == 1
    container.erasure.delete_brain(brain.id)
    assert _old_records(container) == []


def test_a_sweep_told_to_stop_leaves_the_rest_of_a_backlog(container: Container, brain: Brain) -> None:
    """The AWS sweep's invocation running out (its stop question) ends the old bytes' removal
    before its next 100: a backlog is worked through over several sweeps, not past 900 s."""
    repo = container.documents.repo
    doc = container.documents.write(brain, PATH, VERSIONS[0]).document
    repo.records.transact([repo.old_bytes.put_op(brain.id, doc.id, f"{doc.id}/gone-{n}") for n in range(90)])
    repo.records.transact([repo.old_bytes.put_op(brain.id, doc.id, f"{doc.id}/old-{n}") for n in range(90)])
    repo.old_bytes.now = lambda: 1e12  # every record past its grace
    deleted: list[str] = []
    blobs = container.adapters.blobs
    delete = blobs.delete

    def counted(key: str) -> None:  # the time each removal takes
        deleted.append(key)
        delete(key)

    blobs.delete = counted  # type: ignore[method-assign]
    IndexSweeper(container.documents).tick(lambda: bool(deleted))  # runs out during the first 100
    assert len(deleted) == 100 and len(_old_records(container)) == 80
    IndexSweeper(container.documents).tick()  # the next sweep takes the rest
    assert len(deleted) == 180 and _old_records(container) == []
