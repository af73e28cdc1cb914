"""A laptop's brain moved into the AWS stack's emulation (DynamoDB and S3 on moto, the real API
function): `cairn import FILE --server URL` over the gateway, resumable, every surface's data in."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from cairn.entrypoints.cli import archive_remote, main
from cairn.services.thoughtmcp.models import NewMemory
from tests.fakes.container import fake_container
from tests.integration.aws.aws_local_run import aws_local
from tests.support.archive_scenario import exported, fill


def test_a_laptop_brain_goes_into_the_stack_and_every_surface_finds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop = fake_container(tmp_path / "laptop")
    filled = fill(laptop)
    library = laptop.libraries.library(filled.brain.id)
    manuals = laptop.libraries.create_collection(library, "Pump manuals")
    laptop.documents.write(filled.brain, f"{manuals.folder}/hydrex.md", b"# Hydrex\n\nBleed the pump first.")
    laptop.thoughts.remember(
        filled.brain, NewMemory("Erin keeps the kiln at 1200 degrees", "erin", "s", "semantic")
    )
    archive = tmp_path / "notes.jsonl"
    archive.write_text(
        "".join(json.dumps(r) + "\n" for r in exported(laptop, filled.brain)), encoding="utf-8"
    )
    monkeypatch.setattr(archive_remote, "PART_LINES", 5)

    with aws_local(tmp_path / "stack") as stack:
        code = main(["import", str(archive), "--server", stack.base])
        out, err = capsys.readouterr()
        assert code == 0, (out, err, stack.log())
        again = main(["import", str(archive), "--server", stack.base])  # a re-run changes nothing
        rerun = capsys.readouterr().out
        brain = httpx.get(f"{stack.base}/v1/brains/notes", timeout=30).json()
        found = httpx.post(
            f"{stack.base}/v1/brains/{brain['id']}/search", json={"query": "bleed the pump"}, timeout=30
        ).json()
        listed = httpx.get(
            f"{stack.base}/v1/brains/{brain['id']}/documents", params={"recursive": "true"}, timeout=30
        )
    assert "imported into brain notes" in out and "refused: 0" in out
    assert again == 0 and "0 document, 0 memory, 0 link, 0 raw, 0 gap, 0 collection;" in rerun
    assert found["hits"] and found["hits"][0]["path"] == f"{manuals.folder}/hydrex.md"
    paths = {item["path"] for item in listed.json()["items"]}
    assert {"people/alice", f"{manuals.folder}/hydrex.md"} <= paths
