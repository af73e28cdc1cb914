"""POST /v1/archive/import refuses a part it cannot restore whole with a 400 before writing
anything (entrypoints/rest/archive.py, services/archive/service.py `check`): no brain made, no
record of it written, the collection not left `restoring`. Records the brain refuses one by one
(a bad title, tag or media type) are listed and the rest restored, as from `cairn import`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cairn.container import Container

HEADER = {
    "kind": "cairn-archive",
    "format": 2,
    "brain": {"slug": "restored", "name": "Restored"},
    "exported_at": "2026-01-01T00:00:00Z",
}
NOTE = {"kind": "document", "path": "notes/pangolin.md", "content": "# Pangolin\n\nScales of keratin.\n"}


def send(client: TestClient, *lines: str, media: str = "application/x-ndjson") -> Any:
    return client.post("/v1/archive/import", content="\n".join(lines) + "\n", headers={"content-type": media})


def nothing_restored(container: Container) -> bool:
    return all(b.slug != "restored" for b in container.brains.list())


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (json.dumps({"kind": "document", "path": "notes/half.md"}), "line 3: bad record"),
        (json.dumps({"kind": "session", "id": "x"}), "line 3: bad record"),
        ("[" * 3000 + "]" * 3000, "line 3 is nested deeper than 64 levels"),
        ('{"kind": "document", "path": "notes/s.md", "content": "bad \\ud800 here"}', "lone surrogate"),
        (
            '{"kind": "link", "id": 1, "source": "a", "target": "b", "relationship": "x", "weight": Infinity,'
            ' "created_at": "2026-01-01T00:00:00Z"}',
            "line 3 is not valid JSON",
        ),
        (json.dumps({"kind": "end", "records": 1}) + "\n" + json.dumps(NOTE), "line 4: a record after"),
    ],
)
def test_a_part_holding_a_line_no_restore_can_take_is_refused_whole(
    client: TestClient, container: Container, bad: str, said: str
) -> None:
    answer = send(client, json.dumps(HEADER), json.dumps(NOTE), bad)
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == "validation_error" and said in answer.json()["detail"]
    assert nothing_restored(container)


def test_a_part_written_into_an_existing_brain_is_refused_before_its_first_record(
    client: TestClient, container: Container
) -> None:
    brain = container.brains.create("Restored", slug="restored")
    answer = send(
        client, json.dumps(HEADER), json.dumps(NOTE), json.dumps({"kind": "document", "path": "x.md"})
    )
    assert answer.status_code == 400, answer.text
    assert container.documents.list(brain, recursive=True) == []
    assert container.pages.state(container.brains.get("restored")).state != "restoring"


def test_a_deep_header_and_a_wrong_media_type_are_refused(client: TestClient, container: Container) -> None:
    deep = send(client, "[" * 5000 + "]" * 5000)
    assert deep.status_code == 400 and "nested deeper" in deep.json()["detail"]
    typed = send(client, json.dumps(HEADER), media="application/xml")
    assert typed.status_code == 415 and typed.json()["code"] == "unsupported_media_type"
    assert nothing_restored(container)


def test_a_header_with_oversized_metadata_makes_no_brain(client: TestClient, container: Container) -> None:
    header = {**HEADER, "brain": {**HEADER["brain"], "metadata": {f"k{n}": "v" * 100 for n in range(200)}}}
    answer = send(client, json.dumps(header), json.dumps(NOTE))
    assert answer.status_code == 400 and "at most 8,192 bytes" in answer.json()["detail"]
    assert nothing_restored(container)


def test_a_time_without_an_offset_is_taken_as_utc(client: TestClient, container: Container) -> None:
    container.brains.create("Restored", slug="restored")
    naive = {**HEADER, "exported_at": "2026-01-01T00:00:00"}
    changed = {**NOTE, "content": "# Pangolin\n\nChanged.\n"}
    first = send(client, json.dumps(naive), json.dumps(NOTE))
    again = send(client, json.dumps(naive), json.dumps(changed))
    assert first.status_code == again.status_code == 200, again.text
    assert first.json()["written"] == {"document": 1}
    assert again.json()["kept"] == ["line 2: 'notes/pangolin.md'"]  # the brain's is newer than the archive


def test_records_with_fields_no_other_way_in_accepts_are_refused_one_by_one(
    client: TestClient, container: Container
) -> None:
    bad = [
        {**NOTE, "path": "notes/a.md", "title": "evil\u0007title"},
        {**NOTE, "path": "notes/b.md", "tags": ["t" * 129]},
        {**NOTE, "path": "notes/c.md", "content_type": "text/plain\r\nSet-Cookie: x=1"},
        {
            "kind": "gap",
            "query_hash": "ab" * 32,
            "sensitivity": "s" * 10_000,
            "detected_at": "2026-01-01T00:00:00Z",
        },
    ]
    answer = send(client, json.dumps(HEADER), json.dumps(NOTE), *map(json.dumps, bad))
    assert answer.status_code == 200, answer.text
    errors = answer.json()["errors"]
    assert [e.split(":")[0] for e in errors] == ["line 3", "line 4", "line 5", "line 6"]
    assert "control characters" in errors[0] and "1..128 characters" in errors[1]
    assert "media type" in errors[2]
    assert "sensitivity" in errors[3] and answer.json()["written"] == {"document": 1}
    brain = container.brains.get("restored")
    assert [d.path for d in container.documents.list(brain, recursive=True)] == ["notes/pangolin.md"]
    assert container.pages.state(brain).state == "active"


def test_a_memory_whose_id_a_note_of_the_brain_holds_is_refused(
    client: TestClient, container: Container
) -> None:
    brain = container.brains.create("Restored", slug="restored")
    note = container.documents.write(brain, "notes/kept.md", b"# Kept\n\nThe note's own text.\n").document
    memory = {"kind": "memory", "id": note.id, "type": "fact", "content": "A fact under the note's id."}
    answer = send(client, json.dumps(HEADER), json.dumps(memory))
    assert answer.status_code == 200, answer.text
    assert answer.json()["errors"] == [
        f"line 2: memory: memory id {note.id!r} is already used by another document"
    ]
    assert container.documents.content(container.documents.get(brain, "notes/kept.md")).startswith(b"# Kept")


def test_a_part_holding_a_document_twice_reports_the_second_as_a_duplicate(
    client: TestClient, container: Container
) -> None:
    changed = {**NOTE, "content": "# Pangolin\n\nAnother text.\n"}
    answer = send(client, json.dumps(HEADER), json.dumps(NOTE), json.dumps(changed))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["written"] == {"document": 1} and body["kept"] == []
    assert body["duplicates"] == ["line 3: 'notes/pangolin.md', as line 2"]
    brain = container.brains.get("restored")
    assert (
        container.documents.content(container.documents.get(brain, NOTE["path"])) == NOTE["content"].encode()
    )
