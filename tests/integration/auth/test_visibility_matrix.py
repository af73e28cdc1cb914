"""The visibility matrix: every read tool of every MCP surface (from the surface registry, through
tools/list) and every read route of the REST and zengram HTTP APIs (from the app's routes), called
by every kind of principal, aimed at every data set, on the embedded store and on the AWS adapters
(DynamoDB and S3 under moto, OpenSearch over the fake cluster).

Principals: the machine's owner (the static token), a key limited to brain A, a read-only key of the
tenant, another tenant's admin key, ThoughtMCP user X (a JWT whose subject is X), and no credential.
Data (tests/support/visibility_world.py): brain A (public), brain B (the owner's, private), user X's
and user Y's ThoughtMCP memories (in A). A cell is one call; it leaks when its answer (result or
error) holds the secret word of a set the principal may not see, or an id of such a set it was not
sent. Arguments come from each tool's input schema: known argument names take the aimed set's
values (brain, library, query text, user, ids...), every enum of a required argument is tried, and
anything else gets a value its schema accepts; a tool added later is covered as it is."""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections.abc import Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from cairn.auth.principal import PUBLIC, READ
from cairn.domain.models import MemoryType
from cairn.entrypoints.http import create_app
from cairn.entrypoints.mcp.registry import SURFACES, http_path
from cairn.entrypoints.rest.authz import ROUTE_SCOPES
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.thoughtmcp.models import NewMemory
from tests.integration.auth.test_authorization_matrix import sample
from tests.support.app_routes import api_routes
from tests.support.live_world import Live, live_world
from tests.support.shapes import SHAPES
from tests.support.visibility_world import SETS, USERS, DataSet

pytestmark = pytest.mark.integration
PRINCIPALS = ("owner", "key_a", "read_only", "other_tenant", "user_x", "anonymous")
VISIBLE = {
    "owner": {"A", "B", "X", "Y"},
    "key_a": {"A"},
    "read_only": {"A"},
    "other_tenant": {"A"},  # A is public: readable by any tenant, but never its users' memories
    "user_x": {"A", "X"},
    "anonymous": set(),
}
ROLES = {
    "brain": "brain",
    "library_uid": "library",
    "collection": "brain",
    "collection_uid": "collection_uid",
    "query": "text",
    "text": "text",
    "topic": "text",
    "problem": "text",
    "q": "text",
    "userId": "user",
    "memory_id": "memory_id",
    "memoryId": "memory_id",
    "memoryIds": "memory_ids",
    "chunk_uid": "chunk",
    "slug": "slug",
    "session_id": "session",
    "job_id": "job",
    "link_id": "link",
    "name": "entity",
    "path": "path",
    "since": "since",
}
SINCE = "2000-01-01T00:00:00Z"


World = Live
"""The live visibility world (tests/support/live_world.py); the anonymous caller sends no credential."""


@pytest.fixture(scope="module", params=SHAPES)
def world(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One world per shape for both matrices: building it on moto cost each test ~10 s. Each test
    compares only its own runs, and each growth adds new items (grow), so the second test starts
    from a larger world and still sees its own growth."""
    with (
        pytest.MonkeyPatch.context() as monkeypatch,
        live_world(request.param, tmp_path_factory.mktemp("world"), monkeypatch) as world,
    ):
        yield world


def credential_of(world: World, principal: str) -> str | None:
    return None if principal == "anonymous" else world.credentials[principal]


# -- cells -----------------------------------------------------------------------------------------


def leaks(world: World, principal: str, answer: str, sent: str) -> list[str]:
    """The sets the answer shows that the principal may not see (their secret words, or their ids
    the call did not send)."""
    shown = []
    for name, data in world.sets.items():
        if name in VISIBLE[principal]:
            continue
        if data.marker in answer or any(i in answer and i not in sent for i in data.ids):
            shown.append(name)
    return shown


def shows(world: World, answer: str) -> set[str]:
    """The sets whose secret word the answer holds."""
    return {name for name, data in world.sets.items() if data.marker in answer}


def check_reach(found: dict[str, set[str]]) -> None:
    """The calls reached the data: every principal saw every set it may see in some cell (without
    this, a matrix of refusals would pass)."""
    for principal, visible in VISIBLE.items():
        assert found.get(principal, set()) == visible, (principal, found.get(principal))


def aimed(schema: dict[str, Any], data: DataSet) -> list[dict[str, Any]]:
    """Argument sets for a tool aimed at `data`: one per combination of its required enums."""
    props: dict[str, Any] = schema.get("properties", {})
    required = schema.get("required", [])
    base: dict[str, Any] = {}
    for name, prop in props.items():
        role = ROLES.get(name)
        value = SINCE if role == "since" else data.values.get(role) if role else None
        if value is not None and _fits(value, prop):
            base[name] = value
        elif name in required:
            base[name] = sample(prop, min_items=1)
    enums = [(n, props[n]["enum"]) for n in required if "enum" in props[n] and n not in ROLES]
    if not enums:
        return [base]
    return [
        {**base, **dict(zip([n for n, _ in enums], combo, strict=True))}
        for combo in itertools.product(*[v for _, v in enums])
    ]


def _fits(value: Any, prop: dict[str, Any]) -> bool:
    """A list only where the schema takes an array, and a scalar only where it takes no array."""
    kinds = {p.get("type") for p in prop.get("anyOf", [prop])}
    return ("array" in kinds) == isinstance(value, list)


GROWTHS = (("B", "Y"),)
"""The sets grown between runs, in turn: every principal that sees none of them (the owner and the
anonymous caller aside) is asked again, and what it counts must not have moved. Growing the private
brain B and user Y's memories in the public brain A re-asks every principal but the owner: user X
about another user's memories, the others about a brain they may not read and about users'
memories in one they may. Growing X as well re-asked three of them the same question Y had."""


def blind_to(grown: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p for p in PRINCIPALS if p not in ("owner", "anonymous") and not VISIBLE[p] & set(grown))


_GROWN = itertools.count()
"""Numbers for grown items, new in every growth of the module's shared world."""


def grow(world: World, grown: tuple[str, ...]) -> None:
    """More of each grown set, never an item already there: for a brain, notes, facts and pages;
    for a user, memories."""
    c = world.container
    for n in itertools.islice(_GROWN, 3):
        for name in grown:
            data = world.sets[name]
            brain, m, p = data.brain, data.marker, data.probe
            if name in USERS:
                c.thoughts.remember(
                    brain,
                    NewMemory(f"The {p} note {n} ({m}) near the boiler.", USERS[name], "s1", "semantic"),
                )
                continue
            c.ingest.remember(brain, f"# {m} extra\n\nThe {p} boiler note {n}.", path=f"notes/x{n}.md")
            fact = MemoryInput(
                type=MemoryType.fact, content=f"{p} fact {n} of Harlowcorp", source_agent="scout"
            )
            c.memories.store(brain, fact)
            c.pages.put(f"{brain.slug}::people/extra-{n}", f"# {m} {n}\n\nA {p} page.")


def signature(answer: str) -> list[tuple[str, int]]:
    """What an answer counts: every integer under a key naming a count or total, and the length of
    every list, by where they sit (floats and texts left out: ranking statistics are shared by a
    brain, and the order of equal hits may move)."""
    try:
        value = json.loads(answer)
    except ValueError:
        return []
    found: list[tuple[str, int]] = []

    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for key, inner in node.items():
                if isinstance(inner, int) and not isinstance(inner, bool) and COUNTED.search(key):
                    found.append((f"{where}.{key}", inner))
                walk(inner, f"{where}.{key}")
        elif isinstance(node, list):
            found.append((f"{where}[]", len(node)))
            for inner in node:
                walk(inner, f"{where}[]")
        elif isinstance(node, str) and node[:1] in "[{":
            walk(_maybe_json(node), where)

    walk(value, "")
    return sorted(found)


COUNTED = re.compile(r"^(?!access)(.*(count|total|size|number)|n_.*|.*_n)$", re.IGNORECASE)
"""Keys that count something; a visible item's reads (`access_count`) move with anyone's reads."""


def _maybe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


class Matrix:
    """The cells of the runs: what each answer shows, and whether a principal's counts moved when
    data it may not see grew."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.cells = 0
        self.leaked: list[tuple[str, ...]] = []
        self.reached: dict[str, set[str]] = {}
        self.last: dict[tuple[str, ...], list[tuple[str, int]]] = {}
        self.moved: list[tuple[str, ...]] = []
        self.first = True

    def cell(self, key: tuple[str, ...], answer: str) -> None:
        principal, sent = key[2], key[-1]
        counted = signature(answer)
        if self.first:
            self.cells += 1
        elif counted != self.last[key]:
            diff = sorted(set(counted) ^ set(self.last[key]))
            self.moved.append((*key[:4], str(diff)[:300]))
        self.last[key] = counted
        self.reached.setdefault(principal, set()).update(shows(self.world, answer))
        shown = leaks(self.world, principal, answer, sent)
        if shown:
            self.leaked.append((*key[:4], ",".join(shown), answer[:300]))

    def runs(self) -> Iterator[tuple[str, ...]]:
        """The principals to ask in each run: everyone, then after each growth those blind to it."""
        yield PRINCIPALS
        self.first = False
        for grown in GROWTHS:
            grow(self.world, grown)
            yield blind_to(grown)

    def verdict(self, what: str, *, minimum: int) -> None:
        print(
            f"\n{what} visibility matrix ({self.world.shape}): {self.cells} cells, "
            f"{len(self.leaked)} leaking, {len(self.moved)} counting what they may not see"
        )
        assert self.cells >= minimum
        assert self.leaked == []
        assert self.moved == []
        check_reach(self.reached)


# -- MCP -------------------------------------------------------------------------------------------


def _client(url: str, http: httpx2.AsyncClient) -> Client:
    return Client(streamable_http_client(url, http_client=http))


def _http(credential: str) -> httpx2.AsyncClient:
    """A principal's HTTP client, shared by its sessions (the transport leaves it open): each new
    one builds an SSL context, tens of ms of CPU, which 54 sessions paid."""
    return httpx2.AsyncClient(headers={"authorization": f"Bearer {credential}"}, timeout=60)


async def _answer(client: Client, tool: str, args: dict[str, Any]) -> str:
    try:
        result = await client.call_tool(tool, args)
    except MCPError as exc:  # gbrain's style: every failure a JSON-RPC error
        return json.dumps({"error": exc.message, "data": exc.data}, default=str)
    return json.dumps(
        {"content": [b.model_dump() for b in result.content], "structured": result.structured_content},
        default=str,
    )


def _anonymous(http: httpx.Client, url: str, tool: str, args: dict[str, Any]) -> str:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    return http.post(url, json=body, headers=headers).text


async def _read_tools(world: World, url: str, owner: httpx2.AsyncClient) -> list[Any]:
    async with _client(url, owner) as client:
        tools = (await client.list_tools()).tools
    return [t for t in tools if _scope(world, url, t.name) in (READ, PUBLIC)]


_SCOPES: dict[str, dict[str, str]] = {}


def _scope(world: World, url: str, tool: str) -> str | None:
    if url not in _SCOPES:
        from cairn.entrypoints.mcp.registry import build_server
        from cairn.services.ingest.inputs import LocalFilePolicy

        surface = next(s for s in SURFACES if url.endswith(http_path(s)))
        files = LocalFilePolicy(root=Path("/nonexistent"), max_bytes=1)
        _SCOPES[url] = dict(build_server(surface, world.container, files).scopes)
    return _SCOPES[url].get(tool)


@pytest.mark.anyio
async def test_no_mcp_read_tool_shows_a_principal_what_it_may_not_see(world: World) -> None:
    _SCOPES.clear()
    matrix = Matrix(world)
    urls = {surface: f"{world.base}{http_path(surface)}" for surface in SURFACES}

    async def run(principals: tuple[str, ...], anonymous: httpx.Client) -> None:
        # One session per surface and principal: opening one (initialize, and the client's own
        # tools/list for the output schemas) cost as much as the calls it then made.
        for surface, url in urls.items():
            for principal in principals:
                http = clients.get(principal)
                client = _client(url, http) if http is not None else None
                async with client if client is not None else nullcontext():
                    for tool in read_tools[surface]:
                        for name in SETS:
                            for args in aimed(tool.input_schema, world.sets[name]):
                                answer = (
                                    await _answer(client, tool.name, args)
                                    if client is not None
                                    else _anonymous(anonymous, url, tool.name, args)
                                )
                                matrix.cell((surface, tool.name, principal, name, json.dumps(args)), answer)

    async with contextlib.AsyncExitStack() as stack:
        clients = {
            p: await stack.enter_async_context(_http(credential))
            for p in PRINCIPALS
            if (credential := credential_of(world, p)) is not None
        }
        read_tools = {surface: await _read_tools(world, u, clients["owner"]) for surface, u in urls.items()}
        assert all(read_tools.values()), read_tools
        with httpx.Client(timeout=60) as anonymous:
            for principals in matrix.runs():
                await run(principals, anonymous)
    matrix.verdict("MCP", minimum=1000)


# -- REST and zengram's HTTP API --------------------------------------------------------------------


READ_POSTS = {("POST", "/zengram/reflect"), ("POST", "/zengram/research")}
"""zengram's POSTs that only read (its routes declare their scope by method otherwise)."""


def read_routes(world: World) -> list[tuple[str, str]]:
    """(method, path) of every route that only reads: GET everywhere, and POSTs declared
    documents:read (search, ask, recall; zengram's reflect and research)."""
    found = set()
    for path, route in api_routes(create_app(world.container).routes):
        if "/events" in path or path.startswith("/.well-known"):
            continue  # a stream that never ends (the store's change events); the public metadata
        for method in route.methods:
            if method == "GET" or ROUTE_SCOPES.get((method, path)) == READ or (method, path) in READ_POSTS:
                found.add((method, path))
    return sorted(found)


def _request(world: World, method: str, template: str, data: DataSet) -> tuple[str, dict[str, Any], Any]:
    v = data.values
    template = re.sub(r"\{(\w+):\w+\}", r"{\1}", template)  # a route that takes the rest of the path
    path = (
        template.replace("{brainId}", v["brain"])
        .replace("{sessionId}", v["session"] or "ses_none")
        .replace("{jobId}", v["job"] or "job_none")
        .replace("{job_id}", v["job"] or "job_none")
        .replace("{keyId}", "key_none")
        .replace("{memory_id}", v["memory_id"])
        .replace("{name}", v["entity"] or "Nobody")
        .replace("{ref}", v["brain"])
        .replace("{doc_id}", v["memory_id"])
        .replace("{erasureId}", "era_none")
        .replace("{rest}", v["memory_id"])
    )
    assert "{" not in path, f"{template}: a path parameter this matrix does not fill"
    params = {"path": v["path"], "q": v["text"], "query": v["text"], "since": SINCE, "brain": v["brain"]}
    body = {"query": v["text"], "topic": v["text"], "top_k": 10}
    return path, params, body if method == "POST" else None


def test_no_read_route_shows_a_principal_what_it_may_not_see(world: World) -> None:
    routes = read_routes(world)
    assert len(routes) > 20, routes
    matrix = Matrix(world)

    def run(principals: tuple[str, ...]) -> None:
        with httpx.Client(timeout=60) as http:
            for principal in principals:
                credential = credential_of(world, principal)
                headers = {"authorization": f"Bearer {credential}"} if credential else {}
                if credential and principal not in ("user_x", "owner"):
                    headers["x-api-key"] = credential  # zengram's wrapper sends its key so
                for method, template in routes:
                    for name in SETS:
                        path, params, body = _request(world, method, template, world.sets[name])
                        response = http.request(
                            method, f"{world.base}{path}", params=params, json=body, headers=headers
                        )
                        key = (method, template, principal, name, json.dumps([path, params, body]))
                        matrix.cell(key, response.text)

    for principals in matrix.runs():
        run(principals)
    matrix.verdict("REST", minimum=600)
