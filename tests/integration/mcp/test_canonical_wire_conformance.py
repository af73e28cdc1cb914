"""Every canonical `memory_*` call of a recorded session, normal and bad input, answers with the reply
skeleton of the Jeffs Brain tools (canonical_wire_expected.json, written from seed 000's output shapes
and pinned wire types, and the store protocol's error codes where the seed is silent), through the
official MCP client over HTTP against a live server. A success's structuredContent and an error's
JSON text must conform to the skeleton: a missing key, another JSON type, a key outside the seed's
open (`...`, loose) objects, a literal the seed pins, a timestamp that is not RFC 3339 with an offset,
the wrong isError, or an error code other than the seed's fails. Deliberate differences are listed
under `differs`, each naming the Cairn documentation that states it."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from cairn.auth.principal import WRITE
from cairn.entrypoints.mcp.canonical import descriptions
from cairn.ports.generator import Delta, GenerationError
from tests.fakes.generator import ScriptedGenerator
from tests.integration.mcp.conftest import LiveServer, start_server
from tests.support.page_server import serving
from tests.support.wire_skeleton import differences, extra_keys, resolve

pytestmark = pytest.mark.anyio
FIXTURE = json.loads((Path(__file__).parent / "canonical_wire_expected.json").read_text())
CALLS: list[dict[str, Any]] = FIXTURE["calls"]
SEED_CODES = frozenset(FIXTURE["codes"]["tools"]) | frozenset(FIXTURE["codes"]["store_protocol"])
REPO = Path(__file__).parents[3]
TOKEN = "canonical-wire-token"
KiB = 1024
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
PAGE = b"# Lighthouse log\n\nThe lighthouse keeper logs the weather every evening."


@pytest.fixture
def pages() -> Iterator[str]:
    """A small markdown page, one too big to fetch, and a 404."""
    big = b"# Big\n\n" + b"waves " * 2000
    with serving({"/big": (200, big), "/missing": (404, b""), "/": (200, PAGE)}) as base:
        yield base


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(
        tmp_path,
        token=TOKEN,
        rate_limit_per_s=0,
        allow_private_urls=True,  # the page server is on loopback
        ingest_queue_bytes=4 * KiB,
        max_file_bytes=64 * KiB,
        max_url_bytes=4 * KiB,
    )


def _lay_out_files(root: Path) -> None:
    (root / "guides").mkdir()
    (root / "guides" / "readme.md").write_text("# Readme\n\nHow to deploy the lighthouse.\n")
    (root / "notes.txt").write_text("# Heading\n\nplain words about tides")
    (root / "page.html").write_text("<html><body><h1>Tides</h1><p>High tide at noon.</p></body></html>")
    (root / "big.md").write_text("# Big\n\n" + "lighthouse tides and weather. " * 400)  # queued
    (root / "huge.md").write_text("x" * (70 * KiB))  # over the file limit
    (root / "broken.pdf").write_text("not a pdf at all")


async def _open_sessions(live: LiveServer) -> dict[str, str]:
    """The sessions the fixture names, opened over REST (no MCP tool opens one)."""
    said = {
        "$recall": ["which lighthouse? the one by the harbour tides"],
        "$extract": [],
        "$reflect": ["I fixed the lighthouse lamp and it works now, thanks", "Great, glad it works"],
        "$empty": [],
        "$closed": [],
    }
    saved: dict[str, str] = {}
    headers = {"authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=f"{live.base}/v1/brains/notes", headers=headers) as http:
        for name, messages in said.items():
            created = await http.post("/sessions", json={"title": name[1:]})
            assert created.status_code == 201, created.text
            saved[name] = sid = created.json()["id"]
            for content in messages:
                sent = await http.post(f"/sessions/{sid}/messages", json={"role": "user", "content": content})
                assert sent.status_code == 201, sent.text
        closed = await http.post(f"/sessions/{saved['$closed']}/close", json={})
        assert closed.status_code == 200, closed.text
    return saved


@asynccontextmanager
async def _client(live: LiveServer, credential: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {credential}"}, timeout=30) as http,
        Client(streamable_http_client(live.url, http_client=http)) as client,
    ):
        yield client


def reply_of(result: CallToolResult) -> Any:
    """What the fixture's skeletons describe: a success's structuredContent, an error's JSON text."""
    if not result.is_error:
        return result.structured_content
    block = result.content[0]
    assert block.type == "text"
    try:
        return json.loads(block.text)
    except ValueError:
        return block.text


def values_at(value: Any, path: str) -> list[Any]:
    """The values at `$.a.b` (`[]`: every element of a list)."""
    found = [value]
    for key, every in re.findall(r"\.([^.\[]+)|(\[\])", path[1:]):
        if every:
            found = [item for v in found if isinstance(v, list) for item in v]
        else:
            found = [v[key] for v in found if isinstance(v, dict) and key in v]
    return found


def timestamps(value: Any, path: str = "$") -> Iterator[tuple[str, Any]]:
    """Every `*_at` string of a reply, with its path."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key.endswith("_at") and isinstance(item, str):
                yield f"{path}.{key}", item
            yield from timestamps(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from timestamps(item, f"{path}[{i}]")


def problems_of(call: dict[str, Any], result: CallToolResult) -> list[str]:
    key, want_error = call["key"], call.get("error")
    if not result.content or result.content[0].type != "text":
        return [f"{key}: content[0] is not a text block"]
    if result.is_error != (want_error is not None):
        return [f"{key}: isError {result.is_error}, where {want_error or 'a success'} is expected: {result}"]
    reply = reply_of(result)
    if want_error is not None and (not isinstance(reply, dict) or reply.get("code") != want_error):
        return [f"{key}: error {want_error} expected, got {reply!r}"]
    out: list[str] = []
    missing = {re.sub(r"\[\d+\]", "[]", p) + ": missing" for p in call.get("finding", {}).get("missing", [])}
    still: set[str] = set()
    for d in differences(call["reply"], reply):
        known = next((m for m in missing if re.sub(r"\[\d+\]", "[]", d).startswith(m)), None)
        if known is None:
            out.append(f"{key}: {d}")
        else:
            still.add(known)
    out += [f"{key}: the finding no longer holds ({m}): update the fixture" for m in sorted(missing - still)]
    open_ = set(call.get("open", []))
    out += [
        f"{key}: {path}: a key the seed's shape does not have"
        for path in extra_keys(call["reply"], reply)
        if path.rsplit(".", 1)[0] not in open_
    ]
    for path, allowed in call.get("values", {}).items():
        found = values_at(reply, path)
        if not found:
            out.append(f"{key}: {path}: no value, one of {allowed} expected")
        out += [f"{key}: {path}: {v!r}, one of {allowed} expected" for v in found if v not in allowed]
    out += [
        f"{key}: {p}: {t!r} is not RFC 3339 with an offset"
        for p, t in timestamps(reply)
        if not RFC3339.match(t)
    ]
    return out


async def test_every_call_answers_with_the_seeds_skeleton(live: LiveServer, pages: str) -> None:
    live.container.brains.create("Notes", slug="notes")  # the first brain: the default one
    writer = live.container.keys.create(name="writer", tenant="local", scopes=[WRITE])
    _lay_out_files(live.ingest_root)
    saved = await _open_sessions(live)
    saved |= {
        "$page": f"{pages}/docs/page.md",
        "$page_big": f"{pages}/big.md",
        "$page_missing": f"{pages}/missing.md",
    }
    generator = live.container.ask.generator
    problems: list[str] = []
    async with _client(live, TOKEN) as owner, _client(live, writer.plaintext) as limited:
        for call in CALLS:
            client = limited if call.get("caller") == "writer" else owner
            fails = call.get("stream_fails")
            if fails:
                error = GenerationError(fails["code"], fails["message"])
                live.container.ask.generator = ScriptedGenerator([Delta("Partial"), error])
            try:
                result = await client.call_tool(call["tool"], resolve(call["args"], saved))
            finally:
                live.container.ask.generator = generator
            problems += problems_of(call, result)
    assert not problems, "\n".join(problems)


def test_the_session_covers_every_tool_with_normal_and_bad_input() -> None:
    from cairn.entrypoints.mcp.canonical.surface import CANONICAL_TOOLS

    outcomes: dict[str, set[bool]] = {}
    for call in CALLS:
        outcomes.setdefault(call["tool"], set()).add("error" in call)
        assert call["key"].split(".")[1] == ("bad" if "error" in call else "ok"), call["key"]
    assert set(outcomes) == {spec.name for spec in CANONICAL_TOOLS} and len(outcomes) == 11
    assert all(seen == {False, True} for seen in outcomes.values()), outcomes
    assert len({call["key"] for call in CALLS}) == len(CALLS)


def test_every_error_code_is_the_seeds_or_a_documented_difference() -> None:
    for call in CALLS:
        code = call.get("error")
        if code is not None and code not in SEED_CODES:
            assert any(code in d["what"] for d in call.get("differs", [])), call["key"]


def test_every_difference_is_stated_by_cairns_documentation() -> None:
    described = " ".join(v for v in vars(descriptions).values() if isinstance(v, str))

    def text_of(source: str) -> str:
        return " ".join((described if source == "descriptions.py" else (REPO / source).read_text()).split())

    stated = [(call["key"], d) for call in CALLS for d in call.get("differs", [])]
    assert stated, "the session records no difference at all"
    unstated = [
        (key, d["says"]) for key, d in stated if " ".join(d["says"].split()) not in text_of(d["documented"])
    ]
    assert not unstated, unstated
