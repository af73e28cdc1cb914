"""The authorization matrix: every REST route (from the OpenAPI document) and every MCP tool of every
surface (from the surface registry, through tools/list) against every kind of caller, on a real
server on loopback whose JWTs are verified against a JWKS served on loopback.

Callers: no credentials, an expired token, a token for another audience, another tenant's token,
a read-only key on writes, a key limited to one brain touching another, and the rightful owner.
Each route or tool's needed scope is the one it declares (ROUTE_SCOPES, the surface's scopes);
a route or tool that declares none is refused to the owner too, so the owner column catches it.
A brain the caller may not even read (another tenant's, or one outside its key's list) is
`hidden`: the answer must be the one a brain that does not exist gets, word for word but for the
reference, so that no caller learns which brains exist beyond its reach.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult

from cairn.auth import access
from cairn.auth.principal import ADMIN, PUBLIC, READ, WRITE, Principal, Via
from cairn.bootstrap import Container
from cairn.entrypoints.http import create_app
from cairn.entrypoints.mcp.kit.spec import ToolSpec
from cairn.entrypoints.mcp.registry import SURFACES, anonymous_paths, http_path
from cairn.entrypoints.rest.authz import ROUTE_SCOPES, ScopedRoute
from tests.fakes.container import fake_container
from tests.integration.auth.jwks_server import jwks_server
from tests.integration.mcp.conftest import ServerThread
from tests.support.app_routes import api_routes
from tests.unit.auth.tokens import AUDIENCE, ISSUER, SigningKey, claims, jwks, rsa_key

PUBLIC_ROUTES = {"/healthz", "/.well-known/oauth-protected-resource"}
ALL = f"{READ} {WRITE} {ADMIN}"
KEYS_ACTING_AS_THEMSELVES = ("read_only", "other_brain")
"""API keys without brains:admin: on ThoughtMCP they may act only as users of their own subject."""
MISSING_BRAIN = "brn_01nosuchbrainnosuchbrainno"  # the twin of a hidden brain: one that does not exist
CALLERS = ("none", "expired", "wrong_audience", "other_tenant", "read_only", "other_brain", "owner")


@dataclass
class World:
    base: str
    container: Container
    tokens: dict[str, str | None]
    brain_a: str  # acme's brain the callers aim at
    brain_b: str  # another acme brain (the one-brain key is limited to it)
    session: str
    job: str
    key_id: str


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    signer = rsa_key("k1")
    tmp = tmp_path_factory.mktemp("matrix")
    (tmp / "ingest-root").mkdir()
    with jwks_server(jwks(signer)) as issuer_keys:
        container = fake_container(
            tmp,
            ingest_root=tmp / "ingest-root",
            jwt_issuer=ISSUER,
            jwt_jwks_url=issuer_keys.url,
            jwt_audience=[AUDIENCE],
            rate_limit_per_s=0,
            auth_failures_per_min=0,  # its refused tokens all come from one address (test_failed_sign_ins.py)
        )
        owner = Principal("acme", "user-1", frozenset({READ, WRITE, ADMIN}), Via.jwt)
        with access.acting_as(owner, ADMIN):
            a = container.brains.create("Alpha", slug="alpha", visibility="tenant")
            b = container.brains.create("Beta", slug="beta", visibility="tenant")
            container.brains.create("Diary", slug="diary")  # private: user-1's alone
        container.ingest.remember(a, "# Note\n\nThe boiler is serviced in June.", path="notes/a.md")
        session = container.sessions.create(a).id
        job = container.consolidation.queue(a).id
        read_key = container.keys.create(name="reader", tenant="acme", scopes=[READ])
        victim = container.keys.create(name="victim", tenant="acme", scopes=[READ])  # DELETE .../keys/{keyId}
        beta_key = container.keys.create(name="beta", tenant="acme", scopes=[READ, WRITE], brains=[b.id])
        tokens = {
            "none": None,
            "expired": token(signer, exp=int(time.time()) - 3600, iat=int(time.time()) - 7200),
            "wrong_audience": token(signer, aud="https://someone-else.example/mcp"),
            "other_tenant": token(signer, tenant="globex", sub="mallory"),
            "read_only": read_key.plaintext,
            "other_brain": beta_key.plaintext,
            "owner": token(signer),
            "scopeless": token(signer, scope=None),  # not a matrix column: a token for nothing here
        }
        with ServerThread(container) as st:
            yield World(
                f"http://127.0.0.1:{st.port}", container, tokens, a.id, b.id, session, job, victim.key.id
            )


def token(signer: SigningKey, **overrides: Any) -> str:
    return signer.sign(claims(now=time.time(), **{"scope": ALL, **overrides}))


# -- the expected outcome ------------------------------------------------------------------------


def expected(caller: str, scope: str | None, brain_scoped: bool) -> str:
    """`unauthorized`, `forbidden`, `hidden` (answered as a brain that does not exist) or `allowed`
    (anything else: the request got through)."""
    if caller in ("expired", "wrong_audience"):
        return "unauthorized"  # a credential refused: never taken for no credential at all
    if scope == PUBLIC:
        return "allowed"
    if caller == "none":
        return "unauthorized"
    if scope is None:
        return "forbidden"  # a route or tool without a declared scope is refused to everyone
    if caller == "owner":
        return "allowed"
    if caller == "read_only":
        return "allowed" if scope == READ else "forbidden"
    if caller == "other_brain":  # read+write on brain B only, aimed at brain A
        if scope == ADMIN:
            return "forbidden"  # a scope the key lacks, whatever the brain
        return "hidden" if brain_scoped else "allowed"
    assert caller == "other_tenant"
    return "hidden" if brain_scoped else "allowed"


# -- REST ------------------------------------------------------------------------------------------


def rest_routes(world: World) -> list[tuple[str, str]]:
    # built on its first request: more than httpx's default 5 s on a busy machine
    schema = httpx.get(f"{world.base}/openapi.json", timeout=60).json()
    return sorted(
        (method.upper(), path)
        for path, operations in schema["paths"].items()
        for method in operations
        if path not in PUBLIC_ROUTES
    )


def throwaway(world: World) -> str:
    """A brain of acme's like brain A, for a call that deletes what it is aimed at: the world the
    other cells use stays whole."""
    owner = Principal("acme", "user-1", frozenset({READ, WRITE, ADMIN}), Via.jwt)
    with access.acting_as(owner, ADMIN):
        return world.container.brains.create("Throwaway", visibility="tenant").id


def rest_request(world: World, method: str, template: str, *, missing: bool = False) -> httpx.Request:
    """The request a cell sends; with `missing`, the same aimed at a brain (and job) that does not
    exist: what a hidden brain's answer must equal."""
    aimed = throwaway(world) if (method, template) == ("DELETE", "/v1/brains/{brainId}") else world.brain_a
    path = (
        template.replace("{brainId}", MISSING_BRAIN if missing else aimed)
        .replace("{sessionId}", world.session)
        .replace("{jobId}", MISSING_JOB if missing else world.job)
        .replace("{keyId}", world.key_id)
        .replace("{erasureId}", "era_01nosucherasurenosucherasure")
    )
    assert "{" not in path, f"{template}: a path parameter this matrix does not fill"
    params = {"path": "notes/a.md"} if "/documents" in template else {}
    body = json.dumps({"query": "boiler", "content": "x", "name": "n", "scopes": [READ]})
    headers = {"content-type": "application/json"}
    request = httpx.Request(method, f"{world.base}{path}", params=params, content=body, headers=headers)
    request.extensions["cell"] = (method, template)
    return request


MISSING_JOB = "job_01nosuchjobnosuchjobnosuch"


def rest_outcome(status: int) -> str:
    return {401: "unauthorized", 403: "forbidden"}.get(status, "allowed")


def unnamed(text: str, *refs: str) -> str:
    """`text` with the references a request named put as one placeholder."""
    for ref in refs:
        text = text.replace(ref, "<ref>")
    return text


def rest_hidden(
    http: httpx.Client, world: World, caller: str, sent: httpx.Request, got: tuple[int, str]
) -> bool:
    """Whether `got` (status, body), the answer to `sent`, is what the same caller gets for a brain
    (and job) that does not exist."""
    method, template = sent.extensions["cell"]
    twin = rest_request(world, method, template, missing=True)
    twin.headers["authorization"] = f"Bearer {world.tokens[caller]}"
    answer = http.send(twin)
    refs = [part for part in sent.url.path.split("/") if part.startswith(("brn_", "job_"))]
    refs += [MISSING_BRAIN, MISSING_JOB]
    return got[0] == answer.status_code == 404 and unnamed(got[1], *refs) == unnamed(answer.text, *refs)


def test_every_rest_route_for_every_caller(world: World) -> None:
    routes = rest_routes(world)
    assert len(routes) >= 25, routes  # the OpenAPI document lists the whole /v1 surface
    unexpected = []
    with httpx.Client(timeout=30) as http:
        for caller in CALLERS:
            for method, template in routes:
                request = rest_request(world, method, template)
                if world.tokens[caller]:
                    request.headers["authorization"] = f"Bearer {world.tokens[caller]}"
                response = http.send(request, stream=True)  # the events route streams forever
                scope = ROUTE_SCOPES.get((method, template))
                want = expected(caller, scope, "{brainId}" in template or "{jobId}" in template)
                got = rest_outcome(response.status_code)
                # a 2xx body is left unread: the events route lets a caller who passes stream forever
                refusal = got != "allowed" or response.status_code == 404
                text = response.read().decode(errors="replace") if refusal else ""
                response.close()
                if (
                    want == "hidden"
                    and response.status_code == 404
                    and rest_hidden(http, world, caller, request, (response.status_code, text))
                ):
                    got = "hidden"
                if got != want:
                    unexpected.append((caller, method, template, want, response.status_code, text[:160]))
                if got in ("unauthorized", "forbidden"):
                    assert response.headers["content-type"].startswith("application/problem+json")
                    assert "boiler" not in text  # refusals carry no data
    size = len(routes) * len(CALLERS)
    hidden = sum(
        expected(c, ROUTE_SCOPES.get(r), "{brainId}" in r[1] or "{jobId}" in r[1]) == "hidden"
        for c in CALLERS
        for r in routes
    )
    print(f"\nREST matrix: {len(routes)} routes x {len(CALLERS)} callers = {size} requests, {hidden} hidden")
    assert unexpected == []


def test_listings_show_another_tenant_nothing(world: World) -> None:
    headers = {"authorization": f"Bearer {world.tokens['other_tenant']}"}
    brains = httpx.get(f"{world.base}/v1/brains", headers=headers).json()["items"]
    keys = httpx.get(f"{world.base}/v1/admin/keys", headers=headers).json()["items"]
    audit = httpx.get(f"{world.base}/v1/admin/audit", headers=headers).json()["items"]
    assert world.brain_a not in json.dumps(brains) and keys == []
    assert {e["tenant"] for e in audit} <= {"globex"} and world.brain_a not in json.dumps(audit)
    limited = httpx.get(
        f"{world.base}/v1/brains", headers={"authorization": f"Bearer {world.tokens['other_brain']}"}
    ).json()["items"]
    assert [b["id"] for b in limited] == [world.brain_b]


def test_a_private_brain_is_its_owners_alone(world: World) -> None:
    reader = {"authorization": f"Bearer {world.tokens['read_only']}"}  # same tenant, another subject
    owner = {"authorization": f"Bearer {world.tokens['owner']}"}
    listed = httpx.get(f"{world.base}/v1/brains", headers=reader).json()["items"]
    assert "diary" not in [b["slug"] for b in listed]
    hidden = httpx.get(f"{world.base}/v1/brains/diary", headers=reader)
    missing = httpx.get(f"{world.base}/v1/brains/nosuchdiary", headers=reader)
    assert hidden.status_code == missing.status_code == 404  # as if there were no such brain
    assert hidden.json()["detail"] == missing.json()["detail"].replace("nosuchdiary", "diary")
    assert httpx.get(f"{world.base}/v1/brains/diary", headers=owner).status_code == 200


# -- MCP -------------------------------------------------------------------------------------------


def arguments_for(schema: dict[str, Any], brain: str) -> dict[str, Any]:
    """Arguments that pass a tool's input schema, aimed at `brain`."""
    props: dict[str, Any] = schema.get("properties", {})
    args = {name: sample(props[name]) for name in schema.get("required", [])}
    if "brain" in props:
        args["brain"] = brain
    return args


def sample(prop: dict[str, Any], min_items: int = 0) -> Any:
    """A value the property's schema accepts; arrays hold at least `min_items` values."""
    if "enum" in prop:
        return prop["enum"][0]
    options = prop.get("anyOf")
    if options:
        return sample(next((o for o in options if o.get("type") != "null"), options[0]), min_items)
    kind = prop.get("type")
    if kind == "string":
        if prop.get("format") == "uri" or "url" in prop.get("description", "").lower():
            return "https://example.com/a.md"
        return "boiler" * max(1, int(prop.get("minLength", 1)))
    if kind in ("integer", "number"):
        return prop.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        count = max(min_items, int(prop.get("minItems", 0)))
        return [sample(prop.get("items", {"type": "string"}), min_items) for _ in range(count)]
    if kind == "object":
        return arguments_for(prop, "")
    return "boiler"


def tool_outcome(result: Any) -> str:
    if not result.is_error:
        return "allowed"
    text = result.content[0].text if result.content else ""
    if text.startswith("authentication required"):  # Mnemosyne's style: the message as the text
        return "unauthorized"
    if text.startswith("insufficient_scope"):
        return "forbidden"
    if text.startswith("Error: "):  # zengram's style: `Error: <message>` or `Error: API … 403 {…}`
        refused = "insufficient_scope" in text or ": 403 " in text
        return "forbidden" if refused else "allowed"
    try:
        code = json.loads(text).get("code")
    except (ValueError, AttributeError):
        code = None
    return {"forbidden": "forbidden", "unauthorized": "unauthorized"}.get(str(code), "allowed")


def json_rpc_outcome(exc: MCPError) -> str:
    """A surface that answers failures with JSON-RPC errors (gbrain) names Cairn's refusals in
    data.code (gbrain: -32003 with {"code": "forbidden"}); any other error got past authorization."""
    code = exc.data.get("code") if isinstance(exc.data, dict) else None
    return {"forbidden": "forbidden", "unauthorized": "unauthorized"}.get(str(code), "allowed")


async def call_outcome(client: Client, tool: str, args: dict[str, Any]) -> tuple[str, str | None]:
    """The cell's outcome, and the refusal's words when the call failed (None when it did not)."""
    try:
        result = await client.call_tool(tool, args)
    except MCPError as exc:
        return json_rpc_outcome(exc), f"{exc.error.code} {exc.error.message} {exc.error.data}"
    return tool_outcome(result), (
        result.content[0].text if result.content else ""
    ) if result.is_error else None


async def mcp_hidden(client: Client, tool: str, args: dict[str, Any], words: str | None) -> bool:
    """Whether a failed call's words are, but for the reference, those of the same call aimed at a
    brain that does not exist."""
    if words is None:
        return False
    _, twin = await call_outcome(client, tool, {**args, "brain": MISSING_BRAIN})
    refs = (args["brain"], MISSING_BRAIN)
    return twin is not None and unnamed(words, *refs) == unnamed(twin, *refs)


def mcp_client(url: str, credential: str) -> Client:
    """The official MCP client over streamable HTTP, sending `credential` as a bearer token."""
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {credential}"}, timeout=30)
    return Client(streamable_http_client(url, http_client=http))


async def tools_of(url: str, credential: str) -> list[Any]:
    async with mcp_client(url, credential) as client:
        listed = await client.list_tools()
    return list(listed.tools)


@pytest.mark.anyio
async def test_every_mcp_tool_of_every_surface_for_every_caller(world: World) -> None:
    owner = world.tokens["owner"]
    assert owner is not None
    unexpected: list[tuple[Any, ...]] = []
    calls = hidden = 0
    for surface in SURFACES:
        url = f"{world.base}{http_path(surface)}"
        specs = _specs_of(world.container, surface)
        tools = await tools_of(url, owner)
        assert tools, surface
        for caller in CALLERS:
            credential = world.tokens[caller]
            raw = credential is None or caller in ("expired", "wrong_audience")
            # One session per surface and caller (opening one costs as much as a few calls).
            async with nullcontext() if raw else mcp_client(url, credential) as client:
                for tool in tools:
                    calls += 1
                    destructive = tool.annotations is not None and tool.annotations.destructive_hint
                    aimed = throwaway(world) if destructive else world.brain_a
                    args = arguments_for(tool.input_schema, aimed)
                    spec = specs.get(tool.name)
                    needed = spec.needs(spec.args.model_validate(args)) if spec else None
                    want = expected(caller, needed, "brain" in args)
                    if want == "allowed" and "userId" in args and caller in KEYS_ACTING_AS_THEMSELVES:
                        # ThoughtMCP: a key without brains:admin acts only as its own users
                        want = "forbidden"
                    if client is None:
                        got = await _raw_call(url, credential, tool.name, args)
                    else:
                        got, words = await call_outcome(client, tool.name, args)
                        if want == "hidden" and await mcp_hidden(client, tool.name, args, words):
                            got = "hidden"
                    hidden += want == "hidden"
                    if got != want:
                        unexpected.append((surface, caller, tool.name, want, got))
    print(
        f"\nMCP matrix: {calls} tool calls ({len(SURFACES)} surfaces x tools x {len(CALLERS)} callers), "
        f"{hidden} hidden cells"
    )
    assert unexpected == []


async def _raw_call(url: str, credential: str | None, tool: str, args: dict[str, Any]) -> str:
    """A tools/call without a usable credential: the endpoint itself must refuse it (401)."""
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    if credential:
        headers["authorization"] = f"Bearer {credential}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}
    async with httpx.AsyncClient() as http:
        response = await http.post(url, json=body, headers=headers)
    if response.status_code == 200 and credential is None:  # an endpoint that lets anyone in
        assert url.endswith(anonymous_paths()), url
        reply = response.json()
        if "error" in reply:
            error = reply["error"]
            return json_rpc_outcome(MCPError(error["code"], error["message"], error.get("data")))
        return tool_outcome(CallToolResult.model_validate(reply["result"]))
    if response.status_code == 401:
        challenge = response.headers["www-authenticate"]
        assert challenge.startswith('Bearer resource_metadata="') and "oauth-protected-resource" in challenge
    return rest_outcome(response.status_code)


def _specs_of(container: Container, surface: str) -> dict[str, ToolSpec[Any]]:
    """Each tool's declaration: the scope a call with given arguments needs is its `needs`."""
    from cairn.entrypoints.mcp.registry import build_server
    from cairn.services.ingest.inputs import LocalFilePolicy

    server = build_server(surface, container, LocalFilePolicy(root=Path("/nonexistent"), max_bytes=1))
    return dict(server.specs)


# -- the spec's own checks -------------------------------------------------------------------------


def test_a_401_names_the_resource_metadata_which_needs_no_credentials(world: World) -> None:
    refused = httpx.post(f"{world.base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert refused.status_code == 401
    challenge = refused.headers["www-authenticate"]
    metadata_url = challenge.split('resource_metadata="', 1)[1].split('"', 1)[0]

    metadata = httpx.get(metadata_url)

    assert metadata.status_code == 200
    document = metadata.json()
    assert document["resource"] == f"{world.base}/mcp" and document["authorization_servers"] == [ISSUER]
    assert set(document["scopes_supported"]) == {READ, WRITE, ADMIN}


def test_an_invalid_token_says_so_and_a_missing_scope_says_which(world: World) -> None:
    expired = httpx.get(
        f"{world.base}/v1/brains", headers={"authorization": f"Bearer {world.tokens['expired']}"}
    )
    assert expired.status_code == 401 and 'error="invalid_token"' in expired.headers["www-authenticate"]
    write = httpx.post(
        f"{world.base}/v1/brains/{world.brain_a}/documents/append",
        params={"path": "notes/a.md"},
        content=b"more",
        headers={"authorization": f"Bearer {world.tokens['read_only']}"},
    )
    assert write.status_code == 403 and write.json()["code"] == "forbidden"
    assert write.headers["www-authenticate"] == f'Bearer error="insufficient_scope", scope="{WRITE}"'


def test_a_scope_is_refused_before_the_request_is_read(world: World) -> None:
    """FastAPI decodes a JSON body before any dependency runs: without ScopedRoute a caller without
    the scope got 400 for a body it could not send anyway."""
    reader = {"authorization": f"Bearer {world.tokens['read_only']}", "content-type": "application/json"}
    for url in (f"{world.base}/v1/brains", f"{world.base}/v1/brains/{world.brain_a}/sessions"):
        answer = httpx.post(url, content=b"\x00{", headers=reader)
        assert answer.status_code == 403 and answer.json()["code"] == "forbidden", (url, answer.text)
    routes = [
        route for path, route in api_routes(create_app(world.container).routes) if path.startswith("/v1/")
    ]
    assert len(routes) > 30 and all(isinstance(route, ScopedRoute) for route in routes)


def test_mutations_are_audited_with_the_principal_and_refusals_change_nothing(world: World) -> None:
    owner = {"authorization": f"Bearer {world.tokens['owner']}", "content-type": "application/octet-stream"}
    url = f"{world.base}/v1/brains/alpha/documents"
    assert httpx.put(url, params={"path": "notes/c.md"}, content=b"kept", headers=owner).status_code < 300
    refused = httpx.put(
        url,
        params={"path": "notes/c.md"},
        content=b"overwritten",
        headers={**owner, "authorization": f"Bearer {world.tokens['other_tenant']}"},
    )
    written = httpx.put(url, params={"path": "notes/b.md"}, content=b"new", headers=owner)

    assert refused.status_code == 404 and written.status_code < 300  # alpha is hidden from globex
    with access.acting_as(Principal("acme", "user-1", frozenset({READ}), Via.jwt), READ):
        assert world.container.documents.read(world.container.brains.get("alpha"), "notes/c.md") == b"kept"
    entries = httpx.get(f"{world.base}/v1/admin/audit", params={"brain": "alpha"}, headers=owner).json()[
        "items"
    ]
    mine = [e for e in entries if e["target"] == "notes/b.md"]
    assert mine and mine[0]["subject"] == "user-1" and mine[0]["tenant"] == "acme"
    assert mine[0]["action"] == "rest.put_document" and mine[0]["brain_id"] == world.brain_a
    assert mine[0]["detail"] == {"route": "PUT /v1/brains/{brainId}/documents"}
    assert not [e for e in entries if e["subject"] == "mallory"]


def test_a_job_records_who_started_it_and_only_its_brains_readers_see_it(world: World) -> None:
    owner = {"authorization": f"Bearer {world.tokens['owner']}"}
    stranger = {"authorization": f"Bearer {world.tokens['other_tenant']}"}
    started = httpx.post(f"{world.base}/v1/brains/alpha/consolidate", json={}, headers=owner)
    assert started.status_code == 202, started.text
    job_id = started.json()["job_id"]

    assert world.container.jobs.status(job_id).principal == "acme/user-1"
    assert httpx.get(f"{world.base}/v1/jobs/{job_id}", headers=owner).status_code == 200
    hidden = httpx.get(f"{world.base}/v1/jobs/{job_id}", headers=stranger)
    unknown = httpx.get(f"{world.base}/v1/jobs/job_01nosuchjobnosuchjobnosuch", headers=stranger)
    assert hidden.status_code == unknown.status_code == 404  # as if there were no such job
    assert "alpha" not in hidden.text


def test_a_token_with_no_cairn_scope_gets_403_insufficient_scope_from_mcp(world: World) -> None:
    scopeless = world.tokens["scopeless"]
    refused = httpx.post(
        f"{world.base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"authorization": f"Bearer {scopeless}"},
    )
    assert refused.status_code == 403
    assert refused.headers["www-authenticate"].startswith('Bearer error="insufficient_scope"')


def test_a_brain_one_may_use_does_not_open_another_brains_session_or_job(world: World) -> None:
    beta_only = {"authorization": f"Bearer {world.tokens['other_brain']}"}
    session = httpx.get(f"{world.base}/v1/brains/beta/sessions/{world.session}", headers=beta_only)
    recall = httpx.post(
        f"{world.base}/v1/brains/beta/sessions/{world.session}/recall",
        json={"query": "boiler"},
        headers=beta_only,
    )
    job = httpx.get(f"{world.base}/v1/jobs/{world.job}", headers=beta_only)
    assert session.status_code == 404 and recall.status_code == 404  # alpha's session, asked through beta
    assert job.status_code == 404 and "boiler" not in session.text + recall.text + job.text


def test_a_public_brain_is_readable_by_any_tenant_and_writable_only_by_its_own(world: World) -> None:
    owner = {"authorization": f"Bearer {world.tokens['owner']}"}
    stranger = {"authorization": f"Bearer {world.tokens['other_tenant']}"}
    created = httpx.post(
        f"{world.base}/v1/brains", json={"name": "Handbook", "visibility": "public"}, headers=owner
    )
    assert created.status_code == 201
    slug = created.json()["slug"]

    read = httpx.get(f"{world.base}/v1/brains/{slug}", headers=stranger)
    search = httpx.post(f"{world.base}/v1/brains/{slug}/search", json={"query": "x"}, headers=stranger)
    write = httpx.post(
        f"{world.base}/v1/brains/{slug}/documents",
        json={"content": "defaced"},
        headers=stranger,
    )
    listed = httpx.get(f"{world.base}/v1/brains", headers=stranger).json()["items"]

    assert read.status_code == 200 and search.status_code == 200 and write.status_code == 403
    assert slug in [b["slug"] for b in listed]
