"""The web UI's server side through HTTP (in process): what each page shows, that forms need the
CSRF token, that a key limited to one brain sees only that brain, and that edits go through the
services that own each kind of item."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cairn.auth import access
from cairn.container import Container
from cairn.domain.errors import VersionConflict
from cairn.domain.models import MemoryType
from cairn.entrypoints.http import create_app
from cairn.services.explorer.edits import ItemEdits
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.thoughtmcp.models import NewMemory
from tests.fakes.container import fake_container

TOKEN = "ui-test-static-token-0123456789"


def put(t: TestClient, brain: str, path: str, text: str, **headers: str) -> None:
    r = t.put(
        f"/v1/brains/{brain}/documents",
        params={"path": path},
        content=text.encode(),
        headers={"content-type": "application/octet-stream", **headers},
    )
    assert r.status_code in (200, 201, 204), r.text


def csrf_of(t: TestClient) -> str:
    t.get("/ui")
    token = t.cookies.get("cairn_csrf")
    assert token
    return token


def sign_in(t: TestClient, credential: str) -> str:
    """Through the sign-in form, as a browser does: the session token the cookie now holds."""
    form = t.get("/ui/sign-in")
    r = t.post(
        "/ui/sign-in",
        data={"credential": credential, "csrf": _form_token(form.text), "next": "/ui"},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text
    token = t.cookies.get("cairn_ui")
    assert token
    return token


def item_links(html: str, brain: str) -> list[str]:
    return re.findall(rf'href="(/ui/brains/{brain}/items/[^"/]+)"', html)


@pytest.fixture
def open_ui(tmp_path: Path) -> Iterator[tuple[TestClient, Container]]:
    container = fake_container(tmp_path)
    with TestClient(create_app(container), base_url="http://localhost") as t:
        yield t, container


@pytest.fixture
def token_ui(tmp_path: Path) -> Iterator[tuple[TestClient, Container]]:
    container = fake_container(tmp_path, token=TOKEN)
    with TestClient(create_app(container), base_url="http://localhost") as t:
        yield t, container


def test_brains_page_lists_every_surface_role_and_counts(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    c.brains.create("Team Notes", slug="team-notes")
    for n in range(3):
        put(t, "team-notes", f"notes/n{n}.md", f"# Note {n}\nSomething about topic {n}.")
    html = t.get("/ui").text
    row = re.search(r"<tr>\s*<td><a href=\"/ui/brains/team-notes\">.*?</tr>", html, re.S)
    assert row, html
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)
    assert "Jeffs brain" in cells[2] and "gbrain collection" in cells[2] and "Mnemosyne library" in cells[2]
    assert cells[5].strip() == "3"
    assert int(cells[6]) >= 3


def test_items_filter_by_kind_and_validity(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    brain = c.brains.create("Mixed", slug="mixed")
    put(t, "mixed", "notes/plain.md", "# Plain note\nA plain note.")
    with access.as_system():
        first = c.memories.store(
            brain, MemoryInput(type=MemoryType.fact, content="The office is in Leeds.", key="office")
        )
        c.memories.store(
            brain, MemoryInput(type=MemoryType.fact, content="The office is in York.", key="office")
        )
    notes = t.get("/ui/brains/mixed", params={"kind": "note"}).text
    assert "Plain note" in notes and "Leeds" not in notes and "York" not in notes
    current = t.get("/ui/brains/mixed", params={"kind": "typed memory"}).text
    assert "York" in current and "Leeds" not in current
    old = t.get("/ui/brains/mixed", params={"kind": "typed memory", "validity": "superseded"}).text
    assert "Leeds" in old and "York" not in old
    detail = t.get(f"/ui/brains/mixed/items/{first.memory.id}").text
    chain = re.search(r'<ol class="chain">(.*?)</ol>', detail, re.S)
    assert chain and chain.group(0).index("Leeds") < chain.group(0).index("York")
    bad = t.get("/ui/brains/mixed", params={"kind": "nonsense"})
    assert bad.status_code == 400 and "kind is one of" in bad.text


def test_a_deleted_value_is_not_listed_in_its_lines_chain(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    brain = c.brains.create("Offices", slug="offices")
    with access.as_system():
        stored = [
            c.memories.store(
                brain, MemoryInput(type=MemoryType.fact, content=f"The office is in {city}.", key="office")
            )
            for city in ("Leeds", "Derby", "York", "Hull")
        ]
        c.memories.delete(brain, stored[1].memory.id)  # inside the line: joined over
        c.memories.delete(brain, stored[3].memory.id)  # the current value: the key has none now
    detail = t.get(f"/ui/brains/offices/items/{stored[0].memory.id}").text
    chain = re.search(r'<ol class="chain">(.*?)</ol>', detail, re.S)

    assert chain and chain.group(0).index("Leeds") < chain.group(0).index("York")
    assert "Derby" not in chain.group(0) and "Hull" not in chain.group(0)


def test_forms_without_the_csrf_token_change_nothing(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    c.brains.create("Keep", slug="keep")
    csrf_of(t)
    forged = t.post("/ui/brains/keep/delete", data={"confirm": "keep", "csrf": "forged"})
    assert forged.status_code == 403
    missing = t.post("/ui/brains", data={"name": "Injected"})
    assert missing.status_code == 403
    assert [b.slug for b in c.brains.list()] == ["keep"]


def test_delete_brain_needs_its_slug_typed_and_gives_a_receipt(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    c.brains.create("Doomed", slug="doomed")
    put(t, "doomed", "a.md", "# A\ntext")
    csrf = csrf_of(t)
    wrong = t.post("/ui/brains/doomed/delete", data={"confirm": "other", "csrf": csrf})
    assert wrong.status_code == 400 and "nothing was deleted" in wrong.text
    assert [b.slug for b in c.brains.list()] == ["doomed"]
    done = t.post("/ui/brains/doomed/delete", data={"confirm": "doomed", "csrf": csrf})
    assert done.status_code == 200 and 'id="receipt-id"' in done.text
    assert c.brains.list() == []


def test_edit_goes_through_versions_and_shows_in_search(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    c.brains.create("Edits", slug="edits")
    put(t, "edits", "notes/alice.md", "# Alice\nAlice leads the payments team.")
    link = item_links(t.get("/ui/brains/edits").text, "edits")[0]
    csrf = csrf_of(t)
    ok = t.post(
        f"{link}/edit",
        data={"text": "# Alice\nAlice now runs the billing platform.", "version": "1", "csrf": csrf},
        follow_redirects=False,
    )
    assert ok.status_code == 303
    stale = t.post(f"{link}/edit", data={"text": "# Alice\nlost update", "version": "1", "csrf": csrf})
    assert stale.status_code == 409 and "reload" in stale.text
    body = t.get("/v1/brains/edits/documents/read", params={"path": "notes/alice.md"})
    assert "billing platform" in body.text and "lost update" not in body.text
    found = t.get("/ui/brains/edits/search", params={"q": "billing platform"}).text
    assert "notes/alice.md" in found and "calibrated relevance" in found.lower()


def test_a_note_the_page_offers_to_edit_can_be_saved_whatever_its_script(
    open_ui: tuple[TestClient, Container],
) -> None:
    t, c = open_ui
    c.brains.create("Edits", slug="edits")
    text = "# 記録\n" + "会議の記録です。" * 15_000  # 120,000 characters: 1 MB and more once URL-encoded
    put(t, "edits", "notes/minutes.md", text)
    link = item_links(t.get("/ui/brains/edits").text, "edits")[0]
    assert "Save" in t.get(link).text
    edited = text + "\n追記"

    saved = t.post(
        f"{link}/edit", data={"text": edited, "version": "1", "csrf": csrf_of(t)}, follow_redirects=False
    )

    assert saved.status_code == 303, saved.text[:300]
    assert t.get("/v1/brains/edits/documents/read", params={"path": "notes/minutes.md"}).text == edited
    fields = {f"f{n}": "x" for n in range(1_500)}  # more fields than a form may hold: a page, not JSON
    refused = t.post(f"{link}/edit", data={**fields, "csrf": csrf_of(t)})
    assert refused.status_code == 400 and refused.headers["content-type"].startswith("text/html")


def test_typed_memory_edit_and_delete_use_the_memory_service(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    brain = c.brains.create("Mem", slug="mem")
    with access.as_system():
        stored = c.memories.store(
            brain, MemoryInput(type=MemoryType.decision, content="We chose Postgres for billing.")
        )
        before = c.memories.get(brain, stored.memory.id).memory
    csrf = csrf_of(t)
    r = t.post(
        f"/ui/brains/mem/items/{stored.memory.id}/edit",
        data={"text": "We chose SQLite for billing.", "version": str(stored.memory.version), "csrf": csrf},
        follow_redirects=False,
    )
    assert r.status_code == 303, r.text
    with access.as_system():
        after = c.memories.get(brain, stored.memory.id)
    assert after.memory is not None and before is not None
    assert after.memory.content_hash != before.content_hash  # re-hashed by the memory service
    r = t.post(f"/ui/brains/mem/items/{stored.memory.id}/delete", data={"csrf": csrf}, follow_redirects=False)
    assert r.status_code == 303
    with access.as_system():
        gone = c.documents.repo.get_by_id(stored.memory.id)
    assert gone is not None and gone.deleted_at is not None


def test_an_edit_of_a_memory_changed_since_its_page_was_read_is_refused(
    open_ui: tuple[TestClient, Container],
) -> None:
    """Two edits from pages read at one version: the memory's own writer checks the version again
    when it commits, so the second is refused, never laid over the first (the race's last step)."""
    _, c = open_ui
    edits = ItemEdits(c.documents, c.memories, c.thoughts)
    brain = c.brains.create("Mem", slug="mem")
    with access.as_system():
        decision = c.memories.store(
            brain, MemoryInput(type=MemoryType.decision, content="We chose Postgres.")
        ).memory
        thought = c.thoughts.remember(brain, NewMemory("Ana likes tea", "ana", "s1", "semantic"))["memoryId"]
        for memory_id, first, second in (
            (decision.id, "We chose MySQL.", "We chose SQLite."),
            (thought, "Ana likes coffee", "Ana likes water"),
        ):
            shown = c.documents.repo.get_by_id(memory_id)  # what both edit pages read
            assert shown is not None
            edits.edit(brain, shown, first, version=shown.version)
            with pytest.raises(VersionConflict, match="reload"):
                edits.edit(brain, shown, second, version=shown.version)
            now = c.documents.repo.get_by_id(memory_id)
            assert (
                now is not None
                and first in c.documents.text_of(now)
                and second not in c.documents.text_of(now)
            )


def test_signed_out_browser_is_sent_to_sign_in_and_a_key_is_accepted(
    token_ui: tuple[TestClient, Container],
) -> None:
    t, _ = token_ui
    r = t.get("/ui/brains/x?kind=note", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/ui/sign-in?next=")
    page = t.get(r.headers["location"])
    assert page.status_code == 200 and 'name="credential"' in page.text
    assert "<title>Sign in · Cairn</title>" in page.text
    assert "Sign out" not in page.text and "/ui/keys" not in page.text  # nobody is signed in yet
    assert "cairn keys create --name" in page.text  # a command that runs as shown
    csrf = t.cookies.get("cairn_csrf")
    bad = t.post(
        "/ui/sign-in", data={"credential": "wrong", "csrf": csrf, "next": "/ui"}, follow_redirects=False
    )
    assert bad.status_code == 401 and "cairn_ui" not in bad.headers.get("set-cookie", "")
    offsite = t.post(
        "/ui/sign-in",
        data={"credential": TOKEN, "csrf": csrf, "next": "//evil.example/x"},
        follow_redirects=False,
    )
    assert offsite.status_code == 303 and offsite.headers["location"] == "/ui"
    assert t.get("/ui").status_code == 200 and "Sign out" in t.get("/ui").text
    assert TOKEN not in t.get("/ui").text  # the credential never comes back in a page


def test_a_key_limited_to_one_brain_sees_only_that_brain(token_ui: tuple[TestClient, Container]) -> None:
    t, _ = token_ui
    auth = {"authorization": f"Bearer {TOKEN}"}
    for slug in ("alpha", "beta"):
        assert (
            t.post(
                "/v1/brains", json={"name": slug.title(), "slug": slug, "visibility": "tenant"}, headers=auth
            ).status_code
            == 201
        )
        put(t, slug, f"notes/{slug}.md", f"# {slug} secret\nOnly for {slug}.", **auth)
    key = t.post(
        "/v1/admin/keys",
        json={"name": "alpha only", "scopes": ["documents:read", "documents:write"], "brains": ["alpha"]},
        headers=auth,
    ).json()["key"]
    sign_in(t, key)
    listing = t.get("/ui").text
    assert "/ui/brains/alpha" in listing and "/ui/brains/beta" not in listing
    assert t.get("/ui/brains/beta").status_code in (403, 404)
    assert "beta secret" not in t.get("/ui/brains/alpha/search", params={"q": "secret"}).text
    assert t.get("/ui/keys").status_code == 403  # not an admin key


def test_jobs_page_lists_an_ingest_and_its_progress(
    open_ui: tuple[TestClient, Container], tmp_path: Path
) -> None:
    t, c = open_ui
    brain = c.brains.create("Jobs", slug="jobs")
    job = c.jobs.start("ingest", {"brain_id": brain.id, "items": []}, brain_id=brain.id)
    page = t.get("/ui/brains/jobs/jobs").text
    assert f'data-job="{job.id}"' in page
    state = t.get(f"/ui/jobs/{job.id}/progress").json()
    assert state["id"] == job.id and state["status"] in ("queued", "running", "completed", "failed")
    assert t.get("/ui/jobs/job_nope/progress").status_code == 404


def test_erase_asks_for_confirmation_and_gives_a_receipt(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    brain = c.brains.create("Agents", slug="agents")
    with access.as_system():
        c.memories.store(
            brain, MemoryInput(type=MemoryType.fact, content="Bot-7 prefers tabs.", source_agent="bot-7")
        )
    csrf = csrf_of(t)
    r = t.post(
        "/ui/erase", data={"kind": "source_agent", "subject": "bot-7", "confirm": "bot-8", "csrf": csrf}
    )
    assert r.status_code == 400
    nobody = {"kind": "source_agent", "subject": "bot-7", "confirm": "bot-7", "brains": " , ,", "csrf": csrf}
    r = t.post("/ui/erase", data=nobody)  # names no brain: never read as every brain
    assert r.status_code == 400 and "names no brain" in r.text
    assert "Bot-7 prefers tabs" in t.get("/ui/brains/agents", params={"validity": "any"}).text
    unlimited = {"name": "commas-only", "scopes": ["documents:read"], "brains": ",,,", "csrf": csrf}
    r = t.post("/ui/keys", data=unlimited)  # a key for no brain named: refused, not made for every brain
    assert r.status_code == 400 and "names no brain" in r.text
    assert "commas-only" not in t.get("/ui/keys").text
    r = t.post(
        "/ui/erase", data={"kind": "source_agent", "subject": "bot-7", "confirm": "bot-7", "csrf": csrf}
    )
    assert r.status_code == 200 and 'id="receipt-id"' in r.text and "bot-7" not in r.text
    assert "receipt" in t.get("/ui/erase").text.lower()
    listed = t.get("/ui/brains/agents", params={"validity": "any"}).text
    assert "Bot-7 prefers tabs" not in listed


def test_graph_page_draws_links_both_ways(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    brain = c.brains.create("Graph", slug="graph")
    put(t, "graph", "people/alice.md", "# Alice\nAlice")
    put(t, "graph", "people/bob.md", "# Bob\nBob")
    put(t, "graph", "people/carol.md", "# Carol\nCarol")
    with access.as_system():
        docs = {d.path: d for d in c.documents.repo.list(brain.id)}
        c.graph.link(brain, docs["people/alice.md"].id, docs["people/bob.md"].id, "knows")
        c.graph.link(brain, docs["people/bob.md"].id, docs["people/carol.md"].id, "manages")
    one = t.get(f"/ui/brains/graph/items/{docs['people/alice.md'].id}/graph", params={"hops": 1}).text
    assert "Bob" in one and "Carol" not in one
    two = t.get(f"/ui/brains/graph/items/{docs['people/alice.md'].id}/graph", params={"hops": 2}).text
    assert "Carol" in two and two.count("<line ") == 2
    back = t.get(f"/ui/brains/graph/items/{docs['people/bob.md'].id}").text
    assert re.search(r'id="incoming">.*Alice', back, re.S)
    assert (
        t.get(f"/ui/brains/graph/items/{docs['people/alice.md'].id}/graph", params={"hops": 9}).status_code
        == 400
    )


def test_graph_reaches_items_sharing_a_concept(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    brain = c.brains.create("Concepts", slug="concepts")
    with access.as_system():
        for name, text in (
            ("cluster.md", "# Cluster\nThe Kubernetes cluster runs in Frankfurt."),
            ("upgrade.md", "# Upgrade\nNext quarter we upgrade Kubernetes to 1.31."),
            ("canteen.md", "# Canteen\nThe canteen serves soup on Fridays."),
        ):
            c.ingest.ingest_bytes(brain, text.encode(), name=name)
        cluster = next(d for d in c.documents.repo.list(brain.id) if d.title == "Cluster")
    html = t.get(f"/ui/brains/concepts/items/{cluster.id}/graph", params={"hops": 2}).text
    assert 'class="node concept"' in html and "Kubernetes" in html
    assert "Upgrade" in html and "Canteen" not in html


def test_thoughtmcp_waypoints_show_in_the_graph(open_ui: tuple[TestClient, Container]) -> None:
    from cairn.domain.ids import new_id
    from cairn.domain.models import Link
    from cairn.services.thoughtmcp.brain import thought_brain
    from cairn.services.thoughtmcp.models import NewMemory

    t, c = open_ui
    with access.as_system():
        brain = thought_brain(c.brains, None, create=True)
        assert brain is not None
        ids = [
            c.thoughts.remember(
                brain, NewMemory(content=text, user_id="u1", session_id="s1", sector="semantic")
            )["memoryId"]
            for text in (
                "PostgreSQL replication lag alerts fire at 30 seconds.",
                "PostgreSQL replication lag grew after the storage migration.",
            )
        ]
        # the fake embedder's vectors are too far apart for ThoughtMCP to link them itself: the
        # waypoint it would make, both ways, as ThoughtLinks stores one
        for src, dst in ((ids[1], ids[0]), (ids[0], ids[1])):
            c.entities.links.add(
                Link(id=new_id("lnk"), brain_id=brain.id, source_id=src, target_id=dst, kind="semantic",
                     weight=0.8, created_at=brain.created_at)
            )  # fmt: skip
    html = t.get(f"/ui/brains/{brain.slug}/items/{ids[1]}/graph", params={"hops": 1}).text
    assert "alerts fire at 30 seconds" in html and "<line " in html
    listed = t.get(f"/ui/brains/{brain.slug}", params={"kind": "sector memory", "type": "semantic"}).text
    assert listed.count(f"/ui/brains/{brain.slug}/items/") == 2
    with access.as_system():
        c.thoughts.remember(
            brain, NewMemory(content="Tea over coffee.", user_id="u2", session_id="s", sector="emotional")
        )
    users = re.search(r'<p id="users">(.*?)</p>', t.get(f"/ui/brains/{brain.slug}").text, re.S)
    assert users and ">u1<" in users.group(1) and ">u2<" in users.group(1)
    prefix = re.search(r'href="([^"]+)">u2<', users.group(1))
    assert prefix
    only_u2 = t.get(prefix.group(1).replace("&amp;", "&")).text
    assert "Tea over coffee" in only_u2 and "replication lag" not in only_u2


def test_pages_refuse_frames_and_foreign_scripts(open_ui: tuple[TestClient, Container]) -> None:
    t, _ = open_ui
    for path in ("/ui", "/ui/sign-in", "/ui/brains/none"):
        headers = t.get(path).headers
        assert headers["x-frame-options"] == "DENY", path
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert "script-src 'self'" in headers["content-security-policy"]


def test_markup_in_stored_text_is_shown_not_run(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    c.brains.create("Xss", slug="xss")
    put(t, "xss", "notes/evil.md", '# <script>alert(1)</script>\n<img src=x onerror="alert(2)">')
    listing = t.get("/ui/brains/xss").text
    assert "<script>alert(1)</script>" not in listing and "&lt;script&gt;" in listing
    item = t.get(item_links(listing, "xss")[0]).text
    assert "<img src=x" not in item and "&lt;img src=x" in item


def test_mnemosyne_collections_link_to_their_items(open_ui: tuple[TestClient, Container]) -> None:
    from cairn.services.mnemosyne.libraries import Library

    t, c = open_ui
    brain = c.brains.create("Library", slug="library")
    with access.as_system():
        papers = c.libraries.create_collection(Library(brain), "Papers")
    put(t, "library", f"{papers.prefix}attention.md", "# Attention\nTransformers use attention.")
    put(t, "library", "notes/other.md", "# Other\nSomething else.")
    listing = t.get("/ui/brains/library").text
    link = re.search(r'<p id="collections">.*?href="([^"]+)">Papers<', listing, re.S)
    assert link
    shown = t.get(link.group(1).replace("&amp;", "&")).text
    assert "Attention" in shown and "Other" not in shown


def test_bad_form_input_answers_a_page_and_changes_nothing(open_ui: tuple[TestClient, Container]) -> None:
    t, c = open_ui
    c.brains.create("Forms", slug="forms")
    put(t, "forms", "notes/a.md", "# A\nalpha")
    link = item_links(t.get("/ui/brains/forms").text, "forms")[0]
    csrf = csrf_of(t)
    bad_scope = t.post("/ui/keys", data={"name": "k", "scopes": ["root"], "csrf": csrf})
    bad_name = t.post("/ui/keys", data={"name": "k\x00", "scopes": ["documents:read"], "csrf": csrf})
    bad_version = t.post(f"{link}/edit", data={"text": "x", "version": "one", "csrf": csrf})
    bad_kind = t.post("/ui/erase", data={"kind": "everyone", "subject": "s", "confirm": "s", "csrf": csrf})
    bad_day = t.get("/ui/brains/forms", params={"since": "yesterday"})
    for reply in (bad_scope, bad_name, bad_version, bad_kind, bad_day):
        assert reply.status_code == 400 and 'role="alert"' in reply.text, reply.text[:300]
    assert c.keys.list() == []
    assert "alpha" in t.get("/v1/brains/forms/documents/read", params={"path": "notes/a.md"}).text


def _exists(c: Container, slug: str) -> bool:
    with access.as_system():
        return any(b.slug == slug for b in c.brains.list())


def _form_token(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, html
    return found.group(1)


def test_a_planted_token_cookie_does_not_pass_a_signed_in_form(
    token_ui: tuple[TestClient, Container],
) -> None:
    """Another port of localhost, or a sibling subdomain, can set a `cairn_csrf` cookie the browser
    sends here: with a session, the token is the session's, so a planted pair fails."""
    t, c = token_ui
    c.brains.create("Notes", slug="notes")
    sign_in(t, TOKEN)
    planted = "A" * 43
    t.cookies.set("cairn_csrf", planted, path="/")
    forged = t.post("/ui/brains/notes/delete", data={"confirm": "notes", "csrf": planted})
    assert forged.status_code == 403 and _exists(c, "notes")
    own = _form_token(t.get("/ui/brains/notes/delete").text)
    assert own != planted and TOKEN not in own
    done = t.post("/ui/brains/notes/delete", data={"confirm": "notes", "csrf": own}, follow_redirects=False)
    assert done.status_code in (200, 303) and not _exists(c, "notes")


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "http://localhost:9999"},  # another server on this machine: the same site, which
        # the server's Origin rule lets through (REST may be called from a local app): the UI not
        {"origin": "http://evil.localhost"},
        {"origin": "http://[::1].evil.example"},  # urlsplit reads its host as ::1; no browser does
        {"origin": "null"},
        {"sec-fetch-site": "same-site"},
        {"sec-fetch-site": "cross-site"},
    ],
)
def test_a_form_posted_from_another_origin_is_refused(
    open_ui: tuple[TestClient, Container], headers: dict[str, str]
) -> None:
    t, c = open_ui
    c.brains.create("Keep", slug="keep")
    csrf = csrf_of(t)
    r = t.post("/ui/brains/keep/delete", data={"confirm": "keep", "csrf": csrf}, headers=headers)
    assert r.status_code == 403  # by the UI, or before it by the server's own Origin rule
    assert _exists(c, "keep")
    same = {"origin": "http://localhost", "sec-fetch-site": "same-origin"}
    ok = t.post("/ui/brains/keep/delete", data={"confirm": "keep", "csrf": csrf}, headers=same)
    assert ok.status_code == 200 and not _exists(c, "keep")


def test_pages_are_never_cached(token_ui: tuple[TestClient, Container]) -> None:
    t, _ = token_ui
    sign_in(t, TOKEN)
    for path in ("/ui", "/ui/keys", "/ui/sign-in"):
        assert t.get(path).headers["cache-control"] == "no-store", path
    made = t.post(
        "/ui/keys",
        data={"name": "k", "scopes": ["documents:read"], "csrf": _form_token(t.get("/ui/keys").text)},
    )
    assert made.status_code == 200 and made.headers["cache-control"] == "no-store"


def test_a_visit_without_the_cookie_keeps_the_browsers_session(
    token_ui: tuple[TestClient, Container],
) -> None:
    """A link followed from another site arrives without the Strict cookie: the answer asks for a
    sign-in but must not delete the session the browser still holds; a refused cookie is dropped."""
    t, _ = token_ui
    bare = t.get("/ui/brains/x", follow_redirects=False)
    assert bare.status_code == 303 and "cairn_ui" not in bare.headers.get("set-cookie", "")
    t.cookies.set("cairn_ui", "revoked-or-wrong")
    refused = t.get("/ui/brains/x", follow_redirects=False)
    assert refused.status_code == 303 and 'cairn_ui=""' in refused.headers.get("set-cookie", "")


def test_a_long_page_still_lets_the_user_sign_in(token_ui: tuple[TestClient, Container]) -> None:
    t, _ = token_ui
    query = "検索" * 300  # within the search box's 2,000 characters, 5,400 once encoded
    r = t.get("/ui/brains/notes/search", params={"q": query}, follow_redirects=False)
    assert r.status_code == 303 and len(r.headers["location"]) < 2100
    page = t.get(r.headers["location"])
    signed = t.post(
        "/ui/sign-in",
        data={"credential": TOKEN, "csrf": _form_token(page.text), "next": _next_of(page.text)},
        follow_redirects=False,
    )
    assert signed.status_code == 303 and signed.headers["location"] == "/ui/brains/notes/search"
    t.cookies.delete("cairn_ui")
    too_long = t.post(
        "/ui/sign-in",
        data={"credential": TOKEN, "csrf": _form_token(page.text), "next": "/ui/x?q=" + "a" * 3000},
        follow_redirects=False,
    )
    assert too_long.status_code == 303 and too_long.headers["location"] == "/ui"
    huge = t.post("/ui/sign-in", data={"credential": "x" * 1_000_000, "csrf": _form_token(page.text)})
    assert huge.status_code == 413  # refused before a credential is read, not buffered to 31 MB


def _next_of(html: str) -> str:
    found = re.search(r'name="next" value="([^"]*)"', html)
    assert found, html
    return found.group(1).replace("&amp;", "&")


def test_a_caller_seeing_some_owners_gets_no_count_of_the_others(
    token_ui: tuple[TestClient, Container],
) -> None:
    from cairn.services.thoughtmcp.brain import thought_brain
    from cairn.services.thoughtmcp.models import NewMemory

    t, c = token_ui

    def alice_remembers(text: str) -> None:
        with access.as_system():
            brain = thought_brain(c.brains, None, create=True)
            assert brain is not None
            c.thoughts.remember(
                brain, NewMemory(content=text, user_id="alice", session_id="s", sector="semantic")
            )

    alice_remembers("Alice's doctor's appointment is on Tuesday.")
    auth = {"authorization": f"Bearer {TOKEN}"}
    assert t.patch("/v1/brains/thoughtmcp", json={"visibility": "tenant"}, headers=auth).status_code == 200
    key = t.post(
        "/v1/admin/keys",
        json={"name": "plain", "scopes": ["documents:read", "documents:write"]},
        headers=auth,
    ).json()["key"]
    sign_in(t, key)

    def cells() -> list[str]:
        row = re.search(r"<tr>\s*<td><a href=\"/ui/brains/thoughtmcp\">.*?</tr>", t.get("/ui").text, re.S)
        assert row
        return [cell.strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)]

    assert cells()[5:7] == ["0", "0"]
    alice_remembers("Alice is looking for a new job.")
    assert cells()[5:7] == ["0", "0"]
    sign_in(t, TOKEN)  # the owner sees both memories and their chunks
    assert cells()[5] == "2" and int(cells()[6]) >= 2


def test_the_cookie_holds_a_session_and_signing_out_ends_it_for_every_copy(
    token_ui: tuple[TestClient, Container],
) -> None:
    t, _ = token_ui
    session = sign_in(t, TOKEN)
    assert TOKEN not in session and t.get("/ui").status_code == 200

    out = t.post("/ui/sign-out", data={"csrf": _form_token(t.get("/ui").text)}, follow_redirects=False)

    assert out.status_code == 303 and 'cairn_ui=""' in out.headers.get("set-cookie", "")
    t.cookies.set("cairn_ui", session)  # a copy of the cookie taken before the sign-out
    again = t.get("/ui", follow_redirects=False)
    assert again.status_code == 303 and again.headers["location"].startswith("/ui/sign-in")
    assert 'cairn_ui=""' in again.headers.get("set-cookie", "")


def test_revoking_the_key_a_browser_signed_in_with_ends_its_session(
    token_ui: tuple[TestClient, Container],
) -> None:
    t, _ = token_ui
    auth = {"authorization": f"Bearer {TOKEN}"}
    made = t.post("/v1/admin/keys", json={"name": "laptop", "scopes": ["documents:read"]}, headers=auth)
    sign_in(t, made.json()["key"])
    assert t.get("/ui").status_code == 200

    assert t.delete(f"/v1/admin/keys/{made.json()['id']}", headers=auth).status_code in (200, 204)

    refused = t.get("/ui", follow_redirects=False)
    assert refused.status_code == 303 and refused.headers["location"].startswith("/ui/sign-in")


def test_a_cookie_holding_a_credential_instead_of_a_session_signs_nobody_in(
    token_ui: tuple[TestClient, Container],
) -> None:
    """What a browser kept before sessions were kept by the server: refused, and dropped."""
    t, _ = token_ui
    t.cookies.set("cairn_ui", TOKEN)

    refused = t.get("/ui", follow_redirects=False)

    assert refused.status_code == 303 and 'cairn_ui=""' in refused.headers.get("set-cookie", "")


def test_signing_in_again_ends_the_session_the_browser_held(token_ui: tuple[TestClient, Container]) -> None:
    """Signed in with an admin key, then with a read-only one: no copy of the admin session's cookie
    is left working that the user could no longer end."""
    t, _ = token_ui
    auth = {"authorization": f"Bearer {TOKEN}"}
    reader = t.post("/v1/admin/keys", json={"name": "reader", "scopes": ["documents:read"]}, headers=auth)
    admin_session = sign_in(t, TOKEN)

    reader_session = sign_in(t, reader.json()["key"])

    assert reader_session != admin_session and t.get("/ui/keys").status_code == 403
    t.cookies.clear()
    copy = {"cookie": f"cairn_ui={admin_session}"}
    assert t.get("/ui/keys", headers=copy, follow_redirects=False).status_code == 303


@pytest.mark.parametrize("foreign", ["cart[0]=1", 'prefs={"a": 1}', "note=two words", "consent"])
def test_another_apps_cookie_does_not_hide_the_session(
    token_ui: tuple[TestClient, Container], foreign: str
) -> None:
    """Cookies ignore ports: another app on localhost may set cookies the standard library's parser
    stops at. The session is read past them."""
    t, _ = token_ui
    session = sign_in(t, TOKEN)
    t.cookies.clear()

    page = t.get("/ui", headers={"cookie": f"{foreign}; cairn_ui={session}"}, follow_redirects=False)

    assert page.status_code == 200


def test_a_user_pool_token_kept_in_the_cookie_before_sessions_is_dropped(
    token_ui: tuple[TestClient, Container],
) -> None:
    t, _ = token_ui
    t.cookies.set("cairn_ui", "eyJ" + "a" * 900 + ".eyJ" + "b" * 600 + "." + "c" * 342)

    refused = t.get("/ui", follow_redirects=False)

    assert refused.status_code == 303 and 'cairn_ui=""' in refused.headers.get("set-cookie", "")


def test_sign_ins_take_from_their_principals_rate_limit(tmp_path: Path) -> None:
    """A sign-in is a request of the principal it signs in, so one that makes sessions as fast as it
    can is held to its rate as its API calls are; other principals are not. A refused credential
    names no principal and takes from no bucket (as a refused Authorization header)."""
    container = fake_container(tmp_path, token=TOKEN, rate_limit_per_s=0.01, rate_limit_burst=3)
    with TestClient(create_app(container), base_url="http://localhost") as t:
        key = t.post(
            "/v1/admin/keys",
            json={"name": "k", "scopes": ["documents:read"]},
            headers={"authorization": f"Bearer {TOKEN}"},
        ).json()["key"]  # the owner's first request
        form = _form_token(t.get("/ui/sign-in").text)

        def attempt(credential: str) -> int:
            t.cookies.delete("cairn_ui")
            data = {"credential": credential, "csrf": form}
            return t.post("/ui/sign-in", data=data, follow_redirects=False).status_code

        assert [attempt(f"guess-{n}") for n in range(5)] == [401] * 5
        assert [attempt(TOKEN) for _ in range(3)] == [303, 303, 429]
        limited = t.post("/ui/sign-in", data={"credential": TOKEN, "csrf": form}, follow_redirects=False)
        assert int(limited.headers["retry-after"]) >= 1 and "cairn_ui=" not in limited.headers.get(
            "set-cookie", ""
        )
        assert attempt(key) == 303  # another principal's bucket


def test_signing_out_needs_only_the_session_even_once_it_has_ended(
    token_ui: tuple[TestClient, Container],
) -> None:
    t, c = token_ui
    auth = {"authorization": f"Bearer {TOKEN}"}
    made = t.post(
        "/v1/admin/keys", json={"name": "laptop", "scopes": ["documents:read"]}, headers=auth
    ).json()
    sign_in(t, made["key"])
    form = _form_token(t.get("/ui").text)
    t.delete(f"/v1/admin/keys/{made['id']}", headers=auth)  # the session's key is gone

    out = t.post("/ui/sign-out", data={"csrf": form}, follow_redirects=False)

    assert out.status_code == 303 and out.headers["location"] == "/ui/sign-in"
    assert 'cairn_ui=""' in out.headers.get("set-cookie", "")
    assert c.adapters.records.query("ui-sessions", "session#").items == []
