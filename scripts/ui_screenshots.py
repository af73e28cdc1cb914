"""Screenshots of the web UI's main pages, to look at: `cairn serve` on a fresh data directory,
a small team brain written through REST and zengram's API, then headless Chromium (Debian's) saves
brains, items, item, search-explain and graph pages as PNGs.

    .venv/bin/python scripts/ui_screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.mcp_json import call_tool

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
NOTES = {
    "notes/payments.md": "# Payments team\nAlice Moreau leads the payments team in Lyon. It owns refunds.",
    "notes/oncall.md": "# On-call rotation\nThe on-call rotation changes every Monday at 09:00 UTC.",
    "notes/deploys.md": "# Deploy freeze\nNo deploys on Fridays after 15:00; hotfixes need two reviewers.",
    "runbooks/db-failover.md": "# Database failover\nPromote the replica (`make failover`), then page Bob.",
}
LINKS = [
    ("notes/payments", "runbooks/db-failover", "escalates_to"),
    ("notes/oncall", "runbooks/db-failover", "uses"),
    ("notes/payments", "notes/deploys", "follows"),
    ("notes/oncall", "notes/deploys", "enforces"),
]
MEMORIES = [
    "Alice Moreau approved the Lyon office budget for 2027.",
    "Bob Tanaka reviews Alice Moreau's payment service designs.",
    "The team decided to move billing to Postgres 16.",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed(base: str) -> None:
    with httpx.Client(base_url=base, timeout=60) as http:
        http.post(
            "/v1/brains", json={"name": "Team Memory", "slug": "team", "visibility": "tenant"}
        ).raise_for_status()
        http.post("/v1/brains", json={"name": "Research", "slug": "research"}).raise_for_status()
        for path, text in NOTES.items():
            http.put(
                "/v1/brains/team/documents",
                params={"path": path},
                content=text.encode(),
                headers={"content-type": "application/octet-stream"},
            ).raise_for_status()
        for source, target, kind in LINKS:
            arguments = {"from_slug": source, "to_slug": target, "relationship": kind}
            call_tool(http, "/mcp/gbrain", "brain_link", arguments)
        for content in MEMORIES:
            http.post(
                "/zengram/memory",
                json={"type": "fact", "content": content, "source_agent": "claude-code"},
                headers={"x-api-key": "local"},
            ).raise_for_status()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
        cairn = str(Path(sys.executable).parent / "cairn")
        server = subprocess.Popen(
            [cairn, "serve", "--port", str(port), "--data-dir", data], env=env, stdout=subprocess.DEVNULL
        )
        try:
            for _ in range(600):
                try:
                    if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            seed(base)
            shoot(base, args.out)
        finally:
            server.terminate()
            server.wait(timeout=30)


def shoot(base: str, out: Path) -> None:
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(base_url=base, viewport={"width": 1280, "height": 860})
        page.goto("/ui")
        page.screenshot(path=str(out / "brains.png"), full_page=True)
        page.goto("/ui/brains/team")
        page.screenshot(path=str(out / "items.png"), full_page=True)
        page.goto("/ui/brains/team?kind=note")
        page.click("text=Payments team")
        page.screenshot(path=str(out / "item.png"), full_page=True)
        page.click("text=Graph")
        page.select_option("select[name=hops]", "2")
        page.click("form.row button")
        page.screenshot(path=str(out / "graph.png"), full_page=True)
        page.goto("/ui/brains/team/search?q=who+runs+the+payments+team")
        page.screenshot(path=str(out / "search.png"), full_page=True)
        browser.close()
    print(f"wrote brains, items, item, graph and search screenshots to {out}")


if __name__ == "__main__":
    main()
