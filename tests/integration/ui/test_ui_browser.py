"""The web UI end to end in headless Chromium against a live `cairn serve` (a static token, so it
is not open): signing in, brains, items and their filters, an item edited, search with its
explanation, the link graph, jobs with live progress, API keys, a key limited to one brain, erasure
and deleting a brain; the main flows driven from the keyboard."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, Route, expect

from cairn.entrypoints.api_docs import SWAGGER_UI
from tests.integration.mcp.node_clients import CLIENTS
from tests.support.browser import chromium
from tests.support.mcp_json import call_tool
from tests.support.processes import Server, start

TOKEN = "browser-test-token-0123456789abcdef"
AUTH = {"authorization": f"Bearer {TOKEN}"}
LINKS = [("notes/payments", "notes/oncall", "escalates_to"), ("notes/lunch", "notes/oncall", "feeds")]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("ui") / "data"
    live = start(data, extra={"CAIRN_TOKEN": TOKEN})
    try:
        seed(live.base)
        yield live
    finally:
        live.stop()


def seed(base: str) -> None:
    with httpx.Client(base_url=base, headers=AUTH, timeout=60) as http:
        for slug in ("team", "other"):
            r = http.post(
                "/v1/brains", json={"name": f"{slug.title()} Brain", "slug": slug, "visibility": "tenant"}
            )
            assert r.status_code == 201, r.text
        notes = {
            "notes/payments.md": "# Payments\nAlice Moreau leads the payments team in Lyon.",
            "notes/oncall.md": "# On-call\nThe on-call rotation changes every Monday at 09:00.",
            "notes/lunch.md": "# Lunch\nThe canteen serves soup on Fridays.",
        }
        for path, text in notes.items():
            r = http.put(
                "/v1/brains/team/documents",
                params={"path": path},
                content=text.encode(),
                headers={"content-type": "application/octet-stream"},
            )
            assert r.status_code in (200, 201, 204), r.text
        r = http.put(
            "/v1/brains/other/documents",
            params={"path": "secret.md"},
            content=b"# Other secret\nOnly the other brain knows this.",
            headers={"content-type": "application/octet-stream"},
        )
        assert r.status_code in (200, 201, 204), r.text
        for source, target, kind in LINKS:
            arguments = {"from_slug": source, "to_slug": target, "relationship": kind}
            call_tool(http, "/mcp/gbrain", "brain_link", arguments)
        zengram = {"x-api-key": TOKEN}
        for content in (
            "Alice Moreau approved the Lyon office budget.",
            "Bob Tanaka reviews Alice Moreau's designs.",
        ):
            r = http.post(
                "/zengram/memory",
                json={"type": "fact", "content": content, "source_agent": "bot-7"},
                headers=zengram,
                params={"brain": "team"},
            )
            assert r.status_code in (200, 201), r.text


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser: object, server: Server) -> Iterator[Page]:
    context = browser.new_context(base_url=server.base)  # type: ignore[attr-defined]
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    try:
        yield tab
    finally:
        context.close()


def sign_in(page: Page, credential: str = TOKEN) -> None:
    page.goto("/ui")
    expect(page).to_have_url(re.compile(r"/ui/sign-in"))
    page.fill("#credential", credential)
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_have_text("Brains")


def test_sign_in_then_brains_from_the_keyboard(page: Page) -> None:
    page.goto("/ui/brains/team")
    assert "/ui/sign-in" in page.url
    page.fill("#credential", "not-a-key")
    page.keyboard.press("Enter")
    expect(page.locator(".error")).to_contain_text("not accepted")
    page.fill("#credential", TOKEN)
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"/ui/brains/team$"))
    page.goto("/ui")
    rows = page.locator("tbody tr")
    expect(rows.filter(has_text="team")).to_have_count(1)
    expect(rows.filter(has_text="team")).to_contain_text("Jeffs brain")
    # the skip link is the first stop of the keyboard, and lands on the content
    page.keyboard.press("Tab")
    expect(page.locator("a.skip")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#main")).to_be_focused()


def test_create_and_delete_a_brain_with_confirmation(page: Page) -> None:
    sign_in(page)
    page.fill("input[name=name]", "Scratch Pad")
    page.click("form[action='/ui/brains'] button")
    expect(page).to_have_url(re.compile(r"/ui/brains/scratch-pad$"))
    page.goto("/ui/brains/scratch-pad/delete")
    page.fill("#confirm", "wrong")
    page.click("button.danger")
    expect(page.locator(".error")).to_contain_text("nothing was deleted")
    page.goto("/ui/brains/scratch-pad/delete")
    page.fill("#confirm", "scratch-pad")
    page.click("button.danger")
    expect(page.locator("#receipt-id")).to_be_visible()
    page.goto("/ui")
    expect(page.locator("tbody")).not_to_contain_text("scratch-pad")


def test_items_filter_open_edit_and_see_the_edit(page: Page) -> None:
    sign_in(page)
    page.goto("/ui/brains/team")
    page.select_option("select[name=kind]", "typed memory")
    page.click("form.filters button")
    table = page.locator("#items tbody")
    expect(table).to_contain_text("Lyon office budget")
    expect(table).not_to_contain_text("On-call")
    page.select_option("select[name=kind]", "note")
    page.click("form.filters button")
    expect(table).to_contain_text("On-call")
    expect(table).not_to_contain_text("Lyon office budget")
    page.click("text=On-call")
    expect(page.locator("h1")).to_have_text("On-call")
    expect(page.locator("#access")).to_contain_text("Returned by searches")
    page.fill("#text", "# On-call\nThe on-call rotation now changes every Tuesday at 10:00.")
    page.click("text=Save")
    expect(page.locator("#text")).to_have_value(
        "# On-call\nThe on-call rotation now changes every Tuesday at 10:00."
    )
    read = httpx.get(
        page.url.split("/ui/")[0] + "/v1/brains/team/documents/read",
        params={"path": "notes/oncall.md"},
        headers=AUTH,
        timeout=30,
    )
    assert "Tuesday" in read.text


def test_search_explains_each_result(page: Page) -> None:
    sign_in(page)
    page.goto("/ui/brains/team/search")
    page.fill("#q", "who is in charge of payments")
    page.keyboard.press("Enter")
    first = page.locator("#results > li").first
    expect(first).to_contain_text("Payments")
    expect(first.locator(".why")).to_contain_text("Calibrated relevance")
    expect(first.locator("table.legs")).to_be_visible()


def test_graph_follows_links_both_ways_hop_by_hop(page: Page) -> None:
    sign_in(page)
    page.goto("/ui/brains/team?kind=note")
    page.click("text=Payments")
    expect(page.locator("#outgoing")).to_contain_text("escalates_to")
    page.click("text=Graph")
    page.select_option("select[name=hops]", "1")
    page.click("form.row button")
    svg = page.locator("svg#graph")
    expect(svg).to_contain_text("On-call")
    expect(svg).not_to_contain_text("Lunch")
    assert svg.locator("line").count() == 1
    page.select_option("select[name=hops]", "2")
    page.click("form.row button")
    expect(page.locator("svg#graph")).to_contain_text("Lunch")  # reached through On-call's backlink
    assert page.locator("svg#graph line").count() == 2
    # each node is a link, reachable from the keyboard
    page.locator("svg#graph a").nth(1).focus()
    page.keyboard.press("Enter")
    expect(page.locator("h1")).to_contain_text("Links around")


def test_memory_item_names_its_entities(page: Page) -> None:
    sign_in(page)
    page.goto("/ui/brains/team?kind=typed+memory")
    page.click("text=Lyon office budget")
    expect(page.locator("#outgoing")).to_contain_text("mentions")
    assert "ent_" not in page.locator("#outgoing a").all_inner_texts().__str__()


def test_jobs_page_follows_a_consolidation_to_its_end(page: Page, server: Server) -> None:
    sign_in(page)
    started = httpx.post(f"{server.base}/v1/brains/team/consolidate", headers=AUTH, timeout=30)
    assert started.status_code == 202, started.text
    job_id = started.json()["job_id"]
    page.goto("/ui/brains/team/jobs")
    row = page.locator(f"tr[data-job='{job_id}']")
    expect(row).to_be_visible()
    expect(row.locator(".status")).to_have_text("completed", timeout=60_000)  # updated live, no reload
    assert row.locator("progress").get_attribute("value") in ("1", "1.0")


def test_a_key_limited_to_one_brain_sees_only_that_brain(page: Page, browser: object, server: Server) -> None:
    sign_in(page)
    page.goto("/ui/keys")
    page.fill("#key-name", "team reader")
    page.fill("#key-brains", "team")
    page.click("form[action='/ui/keys'] button[type=submit]")
    key = page.locator("#new-key").inner_text().strip()
    assert key.startswith("cairn_")
    context = browser.new_context(base_url=server.base)  # type: ignore[attr-defined]
    limited = context.new_page()
    try:
        sign_in(limited, key)
        body = limited.locator("tbody")
        expect(body).to_contain_text("team")
        expect(body).not_to_contain_text("other")
        limited.goto("/ui/brains/other")
        expect(limited.locator("h1")).to_have_text(re.compile(r"^40[34]$"))
        limited.goto("/ui/brains/team/search?q=secret")
        expect(limited.locator("#results")).not_to_contain_text("Other secret")
        expect(limited.locator("header nav")).not_to_contain_text("API keys")
    finally:
        context.close()
    page.goto("/ui/keys")
    row = page.locator("#keys tbody tr", has_text="team reader")
    row.locator("button.danger").click()
    expect(page.locator("#keys tbody tr", has_text="team reader")).to_contain_text("revoked")
    refused = httpx.get(f"{server.base}/v1/brains", headers={"authorization": f"Bearer {key}"}, timeout=30)
    assert refused.status_code == 401


def test_delete_an_item_after_confirming_and_see_the_gaps_page(page: Page, server: Server) -> None:
    sign_in(page)
    page.goto("/ui/brains/team?kind=note")
    page.click("text=Lunch")
    page.click("text=Delete…")
    expect(page.locator("[role=alert]")).to_contain_text("goes from every surface")
    page.click("button.danger")
    expect(page).to_have_url(re.compile(r"/ui/brains/team\?deleted=1$"))
    expect(page.locator("#items tbody")).not_to_contain_text("Lunch")
    gone = httpx.get(
        f"{server.base}/v1/brains/team/documents/read",
        params={"path": "notes/lunch.md"},
        headers=AUTH,
        timeout=30,
    )
    assert gone.status_code == 404
    page.goto("/ui/brains/team/gaps")
    expect(page.locator("h1")).to_have_text("Knowledge gaps")
    expect(page.locator("#gaps")).to_be_visible()


def test_erase_an_agent_with_its_receipt(page: Page) -> None:
    sign_in(page)
    page.goto("/ui/erase")
    page.select_option("#kind", "source_agent")
    page.fill("#subject", "bot-7")
    page.fill("#confirm", "bot-7")
    page.click("button.danger")
    expect(page.locator("#receipt-id")).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("bot-7")
    page.goto("/ui/brains/team?kind=typed+memory&validity=any")
    expect(page.locator("#items tbody")).not_to_contain_text("Lyon office budget")


def _cdn_from_npm(page: Page, changed: bool = False) -> None:
    """The CDN's Swagger UI files served from the same version's npm package (no network here);
    `changed`: each with a byte more, as a tampered CDN would serve them."""
    dist = CLIENTS / "node_modules" / "swagger-ui-dist"
    types = {".js": "application/javascript", ".css": "text/css"}

    def serve(route: Route) -> None:
        name = route.request.url.rsplit("/", 1)[-1]
        body = (dist / name).read_bytes() + (b"\n" if changed else b"")
        kind = types[Path(name).suffix]
        route.fulfill(body=body, headers={"content-type": kind, "access-control-allow-origin": "*"})

    page.route(f"{SWAGGER_UI}/*", serve)


def test_the_api_docs_render_from_the_pinned_files_and_a_changed_file_never_runs(page: Page) -> None:
    _cdn_from_npm(page)
    page.goto("/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("Cairn")
    expect(page.locator(".opblock-summary-path").first).to_be_visible()  # the operations, from /openapi.json

    tampered = page.context.new_page()
    _cdn_from_npm(tampered, changed=True)
    tampered.goto("/docs")
    tampered.wait_for_load_state("load")
    assert tampered.evaluate("typeof window.SwaggerUIBundle") == "undefined"  # refused by its digest
    expect(tampered.locator(".swagger-ui .info")).to_have_count(0)
