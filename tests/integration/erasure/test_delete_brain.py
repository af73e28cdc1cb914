"""Deleting a brain over REST, the admin MCP surface and the CLI: gone at once for every caller,
then nothing of it left in any store; its slug free again; a write racing the deletion is refused
or purged, never left behind; only its owner or an admin may."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import httpx
import pytest

from cairn.entrypoints.cli.erasure import confirmed
from tests.support.live_world import Live

pytestmark = pytest.mark.anyio
KEPT = ("brains", "erasures", "settling")


def _gone(live: Live, slug: str, brain_id: str, marker: str) -> None:
    assert live.rest("GET", f"/v1/brains/{slug}").status_code == 404
    assert live.rest("GET", f"/v1/brains/{brain_id}").status_code == 404
    assert slug not in json.dumps(live.rest("GET", "/v1/brains").json())
    assert live.records_holding(marker) == []
    live.container.jobs.run_pending()  # the jobs queued before it end (their brain is gone)
    live.container.erasure.settle()  # a later look forgets them (services/erasure/settling.py)
    held = [k for k in live.records_holding(brain_id) if k[0] not in KEPT and not k[0].startswith("audit")]
    # its nameless record stays (the mark late writers meet), its settling mark until its last
    # look, the audit and the receipt
    assert held == []
    assert live.blobs_holding(marker.encode()) == []
    assert live.container.adapters.chunks.count(brain_id) == 0


async def test_deleting_a_brain_over_rest_leaves_nothing_of_it(live: Live) -> None:
    b = live.sets["B"]
    slug = b.brain.slug
    session = live.rest("POST", f"/v1/brains/{slug}/sessions", json={"actor_id": "ines"}).json()
    said = {"role": "user", "content": f"I store the {b.marker} ledger in the blue cabinet."}
    assert live.rest("POST", f"/v1/brains/{slug}/sessions/{session['id']}/messages", json=said).is_success
    live.container.jobs.run_pending()  # an extraction job, whose record holds what it drew

    response = live.rest("DELETE", f"/v1/brains/{slug}")

    assert response.status_code == 200, response.text
    receipt = response.json()
    assert receipt["removed"]["jobs"] >= 1
    assert (
        receipt["kind"] == "brain" and receipt["brains"] == [b.brain.id] and receipt["status"] == "completed"
    )
    removed = receipt["removed"]
    assert removed["documents"] >= 7 and removed["sessions"] == 2 and removed["messages"] == 2
    assert removed["chunks"] >= 6 and removed["blobs"] >= 6 and removed["records"] > 0
    _gone(live, slug, b.brain.id, b.marker)
    if live.shape == "embedded":
        assert live.files_holding(b.marker.encode()) == []
        assert not list((live.data / "vectors").glob(f"{b.brain.id}*"))
    again = live.rest("DELETE", f"/v1/brains/{slug}")
    assert again.status_code == 404 and again.json()["code"] == "not_found"
    remade = live.rest("POST", "/v1/brains", json={"name": "Bravo again", "slug": slug})
    assert remade.status_code == 201 and remade.json()["id"] != b.brain.id  # its slug is free
    a_hits = live.rest("POST", "/v1/brains/alpha/search", json={"query": "alphaprobe boiler"}).json()["hits"]
    assert a_hits  # the other brain is untouched


async def test_the_admin_surface_deletes_and_refuses_who_may_not(live: Live) -> None:
    a = live.sets["A"]
    by_key = await live.tool_json("/mcp/admin", "admin_delete_brain", {"brain": "alpha"}, who="key_a")
    by_stranger = await live.tool_json(
        "/mcp/admin", "admin_delete_brain", {"brain": "alpha"}, who="other_tenant"
    )
    assert by_key["code"] == "forbidden" and by_stranger["code"] == "forbidden"
    assert live.rest("GET", "/v1/brains/alpha").status_code == 200  # refused: nothing changed

    receipt = await live.tool_json("/mcp/admin", "admin_delete_brain", {"brain": "alpha"})

    assert receipt["brains"] == [a.brain.id] and receipt["removed"]["documents"] >= 8
    _gone(live, "alpha", a.brain.id, a.marker)
    assert live.records_holding(live.sets["X"].marker) == []  # its users' memories went with it


def test_a_write_racing_the_deletion_is_refused_or_purged_never_left(live: Live) -> None:
    made = live.rest("POST", "/v1/brains", json={"name": "Racing", "slug": "racing"}).json()
    outcomes: list[int] = []
    stop = threading.Event()

    def write() -> None:
        n = 0
        with httpx.Client(
            timeout=60, headers={"authorization": f"Bearer {live.credentials['owner']}"}
        ) as http:
            while not stop.is_set():
                n += 1
                r = http.put(
                    f"{live.base}/v1/brains/racing/documents",
                    params={"path": f"notes/{n}.md"},
                    content=f"racingmark note {n}".encode(),
                    headers={"content-type": "application/octet-stream"},
                )
                outcomes.append(r.status_code)

    writer = threading.Thread(target=write)
    writer.start()
    while len(outcomes) < 5:
        pass
    deleted = live.rest("DELETE", "/v1/brains/racing")
    stop.set()
    writer.join()

    assert deleted.status_code == 200
    assert set(outcomes) <= {201, 204, 404}, set(outcomes)  # written before, or refused: never a 500
    late = [k for k in live.records_holding(made["id"]) if k[0] not in KEPT and not k[0].startswith("audit")]
    assert late == [] and live.records_holding("racingmark") == []


def test_the_cli_asks_before_deleting(capsys: pytest.CaptureFixture[str]) -> None:
    assert not confirmed("bravo", "delete brain bravo", yes=False, stdin=io.StringIO("bravo\n"))  # no tty
    assert "without --yes" in capsys.readouterr().err

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert not confirmed("bravo", "delete brain bravo", yes=False, stdin=Terminal("brav\n"))
    assert "nothing was removed" in capsys.readouterr().err
    assert confirmed("bravo", "delete brain bravo", yes=False, stdin=Terminal("bravo\n"))
    assert confirmed("bravo", "delete brain bravo", yes=True, stdin=io.StringIO(""))


def test_cairn_brains_delete_and_cairn_erase_on_a_data_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cairn.bootstrap import build_container
    from cairn.config import Settings
    from cairn.entrypoints.cli import main
    from cairn.services.thoughtmcp.models import NewMemory

    data = tmp_path / "data"
    c = build_container(Settings(data_dir=data))
    brain = c.brains.create("Doomed", slug="doomed")
    c.ingest.remember(brain, "# Doomed\n\nThe doomedmark note.", path="notes/doomedmark.md")
    keep = c.brains.create("Kept", slug="kept")
    c.thoughts.remember(keep, NewMemory("Erin's erinmark secret is safe.", "erinmark", "s1", "semantic"))

    refused = main(["brains", "delete", "doomed", "--data-dir", str(data)])  # no terminal, no --yes
    assert refused == 1 and "without --yes" in capsys.readouterr().err
    assert main(["brains", "delete", "doomed", "--yes", "--data-dir", str(data)]) == 0
    assert "deleted brain doomed: 1 documents" in capsys.readouterr().out
    assert main(["brains", "delete", "doomed", "--yes", "--data-dir", str(data)]) == 2
    assert "not_found" in capsys.readouterr().err
    assert main(["erase", "thoughtmcp_user", "erinmark", "--yes", "--data-dir", str(data)]) == 0
    assert "erased thoughtmcp_user 'erinmark': 1 documents" in capsys.readouterr().out
    assert main(["erase", "thoughtmcp_user", "erinmark", "--yes", "--data-dir", str(data)]) == 2
    assert "erased already" in capsys.readouterr().err
    for path in data.rglob("*"):
        if path.is_file():
            assert b"doomedmark" not in path.read_bytes() and b"erinmark" not in path.read_bytes(), path


def test_a_deletion_cut_off_before_it_marked_the_brain_is_finished_by_the_next_start(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = live.sets["B"]
    slug, erasure = b.brain.slug, live.container.erasure

    class Killed(BaseException):
        """The process dying between the erasure's record and the brain's mark."""

    def killed(brain: object) -> None:
        raise Killed

    with monkeypatch.context() as patched:
        patched.setattr(erasure, "_mark_deleted", killed)
        with pytest.raises(Killed):
            erasure.delete_brain(slug)
    assert live.rest("GET", f"/v1/brains/{slug}").status_code == 200  # not marked yet

    (receipt,) = erasure.resume()  # as the next start does

    assert receipt.status == "completed" and receipt.brains == [b.brain.id]
    _gone(live, slug, b.brain.id, b.marker)
    put = live.rest("PUT", f"/v1/brains/{b.brain.id}/documents", params={"path": "late.md"}, content=b"late")
    assert put.status_code == 404


def test_brains_deleted_at_once_are_each_deleted_and_answered(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from tests.support.shapes import served

    with served("embedded", request, tmp_path) as (container, client):
        slugs = [f"gone-{n}" for n in range(8)]
        for slug in slugs:
            brain = container.brains.create(slug.title(), slug=slug)
            for k in range(5):
                container.documents.write(brain, f"notes/{k}.md", f"# Note {k}\n\n{'text ' * 300}".encode())
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda slug: client.delete(f"/v1/brains/{slug}"), slugs))
        assert [a.status_code for a in answers] == [200] * 8, [
            a.text for a in answers if a.status_code != 200
        ]
        assert all(a.json()["status"] == "completed" for a in answers)
        assert all(client.get(f"/v1/brains/{slug}").status_code == 404 for slug in slugs)
