"""`cairn smoke URL`: after `sam deploy`, check a stack end to end the way its clients use it
(docs/SMOKE.md). One command's steps, read top to bottom, are kept in one module: past 500 lines
only because splitting a checklist hides its order.

Each step prints one line as it finishes (`ok`, `skipped (why)` or `FAILED` with what went wrong;
on a terminal the running step shows first, with a job's progress); the command exits 1 naming the
failed steps, 0 when none failed. A step that needs something missing (no client credentials, no
`--sigv4`, a failed step before it) is skipped with the reason, never silently:

1. `GET /healthz`.
2. Every MCP path (the surface registry's) answers a call without credentials with 401 and
   `WWW-Authenticate: Bearer resource_metadata="…"` on this server's own scheme and host, and that
   document answers for that endpoint (RFC 9728: its `resource` is the URL called).
3. A machine token: client credentials (`--client-id`, CAIRN_SMOKE_CLIENT_SECRET) at the token
   endpoint named by `--token-url` or discovered from the metadata's authorization server.
4. The token works on `/mcp` (tools/list through the official MCP client) and on `/v1`.
5. A brain `cairn-smoke-<run>`: made with a SigV4-signed `memory_create_brain` (`--sigv4`, AWS
   credentials from the environment, on `--iam-url`), else with the machine token.
6. A queued ingest: a file above the queueing threshold (`--ingest-bytes`) posted to a presigned
   upload, ingested by key (202 queued), its job polled to completion.
7. A search on every surface finds the file's marker: REST, `/mcp`, gbrain, Mnemosyne; zengram and
   ThoughtMCP search only their own memories, so each stores one and finds it (zengram only when
   the brain it serves is the smoke brain: nothing is written into another brain).
8. Clean up: what the run made is deleted (the brain, a ThoughtMCP memory and its brain if new).

Tokens and secrets are never printed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import secrets
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote, urlsplit

from cairn.domain.scrub import scrub
from cairn.entrypoints.cli.parser import SMOKE_CLIENT_ID_ENV, SMOKE_CLIENT_SECRET_ENV
from cairn.entrypoints.mcp.registry import SURFACES

if TYPE_CHECKING:
    import httpx2

PROBE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": "cairn_smoke", "arguments": {}},
}
"""What an unauthenticated client sends: a tool call (a handshake alone is public on Mnemosyne)."""
SEARCH_WAIT_S = 30.0
"""How long a search may take to see what was just indexed (OpenSearch refreshes about every second)."""


class Failed(Exception):
    """The step failed; the message says what happened."""


class Skipped(Exception):
    """The step did not run; the message says why."""


def cmd_smoke(args: argparse.Namespace) -> int:
    import asyncio  # here, as httpx2 is where used

    return asyncio.run(Smoke(args).run())


def api_base(url: str) -> str:
    """The API's base from its base URL or an McpUrl/ApiUrl output."""
    return re.sub(r"/(mcp|v1)/?$", "", url.rstrip("/"))


class Report:
    """Step lines: the result of each as it finishes; on a terminal, the running one first. Every
    line is scrubbed of credentials: a URL given with its user and password, a token URL's query,
    an answer's excerpt echoing a token."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.status: dict[str, str] = {}
        self.reasons: dict[str, str] = {}

    def running(self, name: str, note: str = "") -> None:
        if self.tty:
            self.out.write(scrub(f"\r\x1b[2K  ...     {name}  {note}".rstrip()))
            self.out.flush()

    def done(self, name: str, status: str, detail: str, took: float | None = None) -> None:
        self.status[name] = status
        self.reasons[name] = detail
        label = {"ok": "ok", "skipped": "skipped", "failed": "FAILED"}[status]
        seconds = f"{took:6.1f} s" if took is not None else " " * 8
        line = f"  {label:<8}{name:<40}{seconds}  {detail}".rstrip()
        self.line(("\r\x1b[2K" if self.tty else "") + line)
        self.out.flush()

    def summary(self) -> int:
        count = {s: [n for n, v in self.status.items() if v == s] for s in ("ok", "skipped", "failed")}
        passed, skipped, failed = (len(count[s]) for s in ("ok", "skipped", "failed"))
        line = f"smoke: {passed} passed, {skipped} skipped, {failed} failed"
        if count["failed"]:
            line += ": " + "; ".join(count["failed"])
        self.line(line)
        return 1 if count["failed"] else 0

    def line(self, text: str) -> None:
        self.out.write(scrub(text) + "\n")
        self.out.flush()


def sigv4_auth(region: str) -> httpx2.Auth:
    """httpx2 auth that signs each request as API Gateway's IAM authorizer checks it (botocore's
    SigV4, service execute-api), with the credentials botocore finds (environment, profile, role)."""
    import httpx2

    try:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.session import get_session
    except ModuleNotFoundError:
        raise Failed("--sigv4 needs botocore: pip install 'cairn[aws]'") from None
    credentials = get_session().get_credentials()
    if credentials is None:
        raise Failed("no AWS credentials found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile)")

    class SigV4(httpx2.Auth):
        requires_request_body = True

        def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
            headers = {k: v for k, v in request.headers.items() if k.lower() != "connection"}
            aws = AWSRequest(
                method=request.method, url=str(request.url), data=request.content, headers=headers
            )
            SigV4Auth(credentials, "execute-api", region).add_auth(aws)
            for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
                if name in aws.headers:
                    request.headers[name] = aws.headers[name]
            yield request

    return SigV4()


class Smoke:
    def __init__(self, args: argparse.Namespace, out: TextIO | None = None) -> None:
        self.args = args
        self.base = api_base(args.url)
        self.iam_base = api_base(args.iam_url or args.url)
        self.report = Report(out or sys.stdout)
        self.run_id = secrets.token_hex(4)
        self.marker = f"cairnsmoke{self.run_id}"
        self.metadata: dict[str, Any] = {}
        self.token: str | None = None
        self.signer: httpx2.Auth | None = None
        self.doer: str | None = None
        """Who made the brain and does the brain's work: "sigv4" or "machine"."""
        self.brain: dict[str, Any] | None = None
        self.thought: tuple[str, str] | None = None
        self.thoughtmcp_brain: dict[str, Any] | None = None
        """The ThoughtMCP brain when this run's first remember made it (deleted at the end)."""

    # -- running ---------------------------------------------------------------------------------

    async def run(self) -> int:
        self.report.line(f"cairn smoke {self.base} (run {self.run_id})")
        brain = "SigV4 memory_create_brain" if self.args.sigv4 else "create the smoke brain (machine token)"
        try:
            await self.step("healthz", self.healthz)
            for surface in SURFACES.values():
                await self.step(
                    f"401 + metadata {surface.http_path}", partial(self.challenge, surface.http_path)
                )
            await self.step("machine token", self.machine_token)
            await self.step("machine token on /mcp (tools/list)", self.machine_mcp, needs=("machine token",))
            await self.step(
                "machine token on /v1 (GET /v1/brains)", self.machine_rest, needs=("machine token",)
            )
            if not self.args.sigv4:
                self.report.done("SigV4 memory_create_brain", "skipped", "skipped (no --sigv4)")
            await self.step(brain, self.create_brain, needs=() if self.args.sigv4 else ("machine token",))
            await self.step("queued ingest", self.queued_ingest, needs=(brain,))
            for name, search in (
                ("search /v1", self.search_rest),
                ("search /mcp", partial(self.search_tool, "/mcp", "memory_search")),
                ("search /mcp/gbrain", partial(self.search_tool, "/mcp/gbrain", "brain_search")),
                ("search /mcp/mnemosyne", partial(self.search_tool, "/mcp/mnemosyne", "search")),
            ):
                await self.step(name, search, needs=("queued ingest",))
            await self.step("store + search /mcp/zengram", self.zengram, needs=(brain,))
            await self.step("store + search /mcp/thoughtmcp", self.thoughtmcp, needs=(brain,))
        finally:
            await self.step("clean up", self.clean_up)
        return self.report.summary()

    async def step(
        self, name: str, action: Callable[[], Awaitable[str]], needs: tuple[str, ...] = ()
    ) -> None:
        unmet = [n for n in needs if self.report.status.get(n) != "ok"]
        if unmet:
            first = unmet[0]
            why = (
                self.report.reasons[first]
                if self.report.status.get(first) == "skipped"
                else f"{first} failed"
            )
            self.report.done(name, "skipped", why if why.startswith("skipped") else f"skipped ({why})")
            return
        import asyncio

        self.report.running(name)
        started = time.monotonic()
        try:
            detail = await action()
        except asyncio.CancelledError:  # Ctrl-C: say where it stopped; the clean-up still runs
            self.report.done(name, "failed", "interrupted", time.monotonic() - started)
            raise
        except Skipped as skipped:
            self.report.done(name, "skipped", f"skipped ({skipped})")
        except Failed as failed:
            self.report.done(name, "failed", str(failed), time.monotonic() - started)
        except Exception as error:  # an unexpected answer is this step's failure, not the command's
            self.report.done(name, "failed", _describe(error), time.monotonic() - started)
        else:
            self.report.done(name, "ok", detail, time.monotonic() - started)

    # -- clients ---------------------------------------------------------------------------------

    def http(self, principal: str | None = None) -> httpx2.AsyncClient:
        import httpx2

        timeout = self.args.timeout
        if principal == "sigv4":
            self.signer = self.signer or sigv4_auth(self.region())
            return httpx2.AsyncClient(base_url=self.iam_base, auth=self.signer, timeout=timeout)
        headers = {"authorization": f"Bearer {self.token}"} if principal == "machine" else {}
        return httpx2.AsyncClient(base_url=self.base, headers=headers, timeout=timeout)

    def region(self) -> str:
        host = urlsplit(self.iam_base).hostname or ""
        found = re.search(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com$", host)
        named = found.group(1) if found else None
        env = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        return self.args.region or named or env or "us-east-1"

    @contextlib.asynccontextmanager
    async def mcp(self, principal: str, path: str) -> AsyncIterator[Any]:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        base = self.iam_base if principal == "sigv4" else self.base
        async with (
            self.http(principal) as http,
            Client(streamable_http_client(base + path, http_client=http)) as c,
        ):
            yield c

    async def call(
        self, path: str, tool: str, arguments: dict[str, Any], principal: str | None = None
    ) -> Any:
        async with self.mcp(principal or self.doer or "machine", path) as client:
            result = await client.call_tool(tool, arguments)
        if result.is_error:
            raise Failed(f"{tool} on {path} answered an error: {_excerpt(_text(result))}")
        return result

    async def rest(
        self, method: str, path: str, *, ok: tuple[int, ...] = (200,), **kw: Any
    ) -> httpx2.Response:
        async with self.http(self.doer) as http:
            response = await http.request(method, path, **kw)
        if response.status_code not in ok:
            raise Failed(f"{method} {path} answered {response.status_code}: {_excerpt(response.text)}")
        return response

    # -- steps -----------------------------------------------------------------------------------

    async def healthz(self) -> str:
        async with self.http() as http:
            response = await http.get("/healthz")
        if response.status_code != 200 or response.json().get("status") != "ok":
            raise Failed(f"GET /healthz answered {response.status_code}: {_excerpt(response.text)}")
        return f"version {response.json().get('version', '?')}"

    async def challenge(self, path: str) -> str:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        async with self.http() as http:
            refused = await http.post(path, json=PROBE, headers=headers)
            if refused.status_code != 401:
                raise Failed(
                    f"a call without credentials answered {refused.status_code}, not 401 (is it open?)"
                )
            challenge = refused.headers.get("www-authenticate", "")
            found = re.search(r'resource_metadata="([^"]+)"', challenge)
            if not found:
                raise Failed(f"the 401 names no resource_metadata (WWW-Authenticate: {challenge!r})")
            url = found.group(1)
            if not url.startswith(self.base + "/"):
                raise Failed(f"the 401 names {url}: not on {self.base} (scheme or host differ)")
            answer = await http.get(url)
        if answer.status_code != 200:
            raise Failed(f"GET {url} answered {answer.status_code}")
        document = answer.json()
        if document.get("resource") != self.base + path:
            raise Failed(f"{url} names resource {document.get('resource')!r}, not {self.base + path}")
        self.metadata[path] = document
        servers = document.get("authorization_servers") or []
        return f"authorization server {servers[0]}" if servers else "no authorization server named"

    async def machine_token(self) -> str:
        client_id, secret = self.args.client_id, self.args.client_secret
        if not client_id or not secret:
            raise Skipped(
                "no client credentials given: --client-id or "
                f"${SMOKE_CLIENT_ID_ENV}, ${SMOKE_CLIENT_SECRET_ENV}"
            )
        url = self.args.token_url or await self.discover_token_url()
        form = {"grant_type": "client_credentials"} | ({"scope": self.args.scope} if self.args.scope else {})
        import httpx2

        async with self.http() as http:
            try:
                response = await http.post(url, data=form, auth=httpx2.BasicAuth(client_id, secret))
            except httpx2.HTTPError as error:
                raise Failed(f"POST {url}: {_describe(error)}") from None
        body = _json(response)
        if response.status_code != 200 or not isinstance(body.get("access_token"), str):
            reason = f"{body.get('error', '')} {body.get('error_description', '')}".strip() or _excerpt(
                response.text
            )
            raise Failed(f"POST {url} answered {response.status_code}: {reason}")
        self.token = body["access_token"]
        import jwt

        scopes = jwt.decode(self.token, options={"verify_signature": False}).get("scope", "")
        return f"from {url}; scopes {scopes or '(none)'}"

    async def discover_token_url(self) -> str:
        servers = self.metadata.get("/mcp", {}).get("authorization_servers") or []
        if not servers:
            raise Failed(
                "no authorization server in /mcp's metadata to discover the token endpoint: give --token-url"
            )
        import httpx2

        tried = []
        async with self.http() as http:
            for url in discovery_urls(str(servers[0])):
                tried.append(url)
                with contextlib.suppress(httpx2.HTTPError, ValueError):
                    found = (await http.get(url)).json().get("token_endpoint")
                    if isinstance(found, str) and found:
                        return found
        raise Failed(f"no token_endpoint at {', '.join(tried)}: give --token-url")

    async def machine_mcp(self) -> str:
        async with self.mcp("machine", "/mcp") as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
        if "memory_search" not in names:
            raise Failed(f"tools/list on /mcp lacks memory_search: {sorted(names)}")
        return f"{len(names)} tools"

    async def machine_rest(self) -> str:
        async with self.http("machine") as http:
            response = await http.get("/v1/brains")
        if response.status_code != 200:
            raise Failed(f"GET /v1/brains answered {response.status_code}: {_excerpt(response.text)}")
        return f"{len(response.json().get('items', []))} brains visible"

    async def create_brain(self) -> str:
        self.doer = "sigv4" if self.args.sigv4 else "machine"
        name = f"cairn-smoke-{self.run_id}"
        try:
            result = await self.call("/mcp", "memory_create_brain", {"name": name, "slug": name})
        except Failed as failed:
            raise Failed(
                f"{failed} (making a brain needs brains:admin: IamAdminRoleArns or IamScopes for SigV4 "
                "callers, MachineClientScopes for the machine client)"
            ) from None
        self.brain = dict(result.structured_content or {})
        where = self.iam_base if self.doer == "sigv4" else self.base
        return f"{self.brain.get('slug')} ({self.brain.get('id')}) on {where}"

    async def queued_ingest(self) -> str:
        assert self.brain is not None
        brain, name = quote(self.brain["id"], safe=""), f"cairn-smoke-{self.run_id}.md"
        data = self.document(self.args.ingest_bytes)
        upload = {"file_name": name, "content_type": "text/markdown", "size": len(data)}
        ticket = (await self.rest("POST", f"/v1/brains/{brain}/documents/uploads", json=upload)).json()
        async with self.http() as http:  # to S3: the presigned form is the credential
            files = {"file": (name, data, "text/markdown")}
            sent = await http.post(ticket["upload"]["url"], data=ticket["upload"]["fields"], files=files)
        if sent.status_code not in (200, 201, 204):
            raise Failed(f"the presigned upload was refused: {sent.status_code} {_excerpt(sent.text)}")
        path = f"/v1/brains/{brain}/documents/ingest/upload"
        queued = (await self.rest("POST", path, json={"key": ticket["key"]}, ok=(200, 202))).json()
        if queued.get("status") != "queued":
            raise Failed(
                f"{len(data)} bytes were ingested inside the call ({queued.get('status')}), not queued: the "
                "stack's IngestQueueBytes is above --ingest-bytes"
            )
        job = await self.wait_for(queued["job_id"])
        result = job.get("result") or {}
        return f"{len(data)} bytes, job {job['id']} completed, {result.get('chunk_count', '?')} chunks"

    async def wait_for(self, job_id: str) -> dict[str, Any]:
        import asyncio

        deadline = time.monotonic() + self.args.job_timeout
        while True:
            job = (await self.rest("GET", f"/v1/jobs/{quote(job_id, safe='')}")).json()
            if job["status"] == "completed":
                return dict(job)
            if job["status"] == "failed":
                raise Failed(f"job {job_id} failed: {job.get('error') or job.get('message')}")
            if time.monotonic() > deadline:
                raise Failed(f"job {job_id} still {job['status']} after {self.args.job_timeout:g} s")
            self.report.running("queued ingest", f"job {job['status']} {100 * job.get('progress', 0):.0f}%")
            await asyncio.sleep(1.0)

    def document(self, size: int) -> bytes:
        head = (
            f"# Cairn smoke test {self.run_id}\n\n{self.marker}: the smoke test's heron nests by the "
            "quarry lake. Finding this sentence proves the queued ingest reached every surface.\n\n"
        )
        lines, total, n = [head], len(head), 0
        while total < size:
            n += 1
            line = f"Paragraph {n}: routine archive notes, there to make this file large enough to queue.\n\n"
            lines.append(line)
            total += len(line)
        return "".join(lines).encode()

    async def search_rest(self) -> str:
        assert self.brain is not None
        path = f"/v1/brains/{quote(self.brain['id'], safe='')}/search"
        return await self.until_found(lambda: self.rest("POST", path, json={"query": self.query}))

    async def search_tool(self, path: str, tool: str) -> str:
        assert self.brain is not None
        arguments = {
            "memory_search": {"brain": self.brain["id"], "query": self.query},
            "brain_search": {"query": self.query, "collection": self.brain["slug"]},
            "search": {"query": self.query, "library_uid": self.brain["id"]},
        }[tool]
        return await self.until_found(lambda: self.call(path, tool, arguments))

    @property
    def query(self) -> str:
        return f"{self.marker} heron quarry lake"

    async def until_found(self, search: Callable[[], Awaitable[Any]], what: str = "the ingested text") -> str:
        import asyncio

        deadline = time.monotonic() + SEARCH_WAIT_S
        while True:
            answer = await search()
            if self.marker in _payload(answer):
                return f"found {what}"
            if time.monotonic() > deadline:
                found = _excerpt(_payload(answer))
                raise Failed(f"{what} was not found within {SEARCH_WAIT_S:g} s: {found}")
            await asyncio.sleep(2.0)

    async def zengram(self) -> str:
        assert self.brain is not None
        stats = await self.call("/mcp/zengram", "brain_stats", {})
        serving = (stats.meta or {}).get("cairn.dev/brain")
        if serving != self.brain["id"]:
            raise Skipped(
                f"zengram serves brain {serving or '(none)'}, not the smoke brain; it searches only its own "
                "memories, and the smoke test writes nothing into another brain"
            )
        note = {
            "type": "fact",
            "content": f"{self.marker}: zengram stores and finds this fact.",
            "source_agent": "cairn-smoke",
        }
        await self.call("/mcp/zengram", "brain_store", note)
        search = {"query": self.marker}
        return await self.until_found(lambda: self.call("/mcp/zengram", "brain_search", search), "its memory")

    async def thoughtmcp(self) -> str:
        existed = {b["slug"]: b["id"] for b in (await self.rest("GET", "/v1/brains")).json().get("items", [])}
        user = (
            f"cairn-smoke-{self.run_id}"
            if self.doer == "sigv4"
            else f"{self.args.client_id}:cairn-smoke-{self.run_id}"
        )
        thought = {
            "content": f"{self.marker}: ThoughtMCP remembers and finds this thought.",
            "userId": user,
            "sessionId": f"cairn-smoke-{self.run_id}",
            "primarySector": "semantic",
        }
        stored = _json_text(await self.call("/mcp/thoughtmcp", "remember", thought))
        if not stored.get("success"):
            raise Failed(f"remember answered {_excerpt(json.dumps(stored))}")
        self.thought = (str(stored["data"]["memoryId"]), user)
        now = {b["slug"]: b["id"] for b in (await self.rest("GET", "/v1/brains")).json().get("items", [])}
        made = [s for s in now if s not in existed and s != self.brain_slug]
        self.thoughtmcp_brain = {"id": now[made[0]], "slug": made[0]} if made else None
        search = {"userId": user, "text": self.marker}
        return await self.until_found(lambda: self.call("/mcp/thoughtmcp", "search", search), "its memory")

    @property
    def brain_slug(self) -> str:
        return str((self.brain or {}).get("slug", ""))

    async def clean_up(self) -> str:
        if self.brain is None and self.thought is None:
            raise Skipped("nothing was created")
        left: list[str] = []
        if self.thought is not None:
            memory, user = self.thought
            with contextlib.suppress(Failed):
                await self.call(
                    "/mcp/thoughtmcp", "forget", {"memoryId": memory, "userId": user, "soft": False}
                )
                memory = ""
            if memory:
                left.append(f"ThoughtMCP memory {memory} of {user}")
        deleted = []
        for brain, name in ((self.thoughtmcp_brain, "its ThoughtMCP brain"), (self.brain, self.brain_slug)):
            if brain:
                try:
                    await self.rest("DELETE", f"/v1/brains/{quote(brain['id'], safe='')}")
                    deleted.append(name)
                except Failed as failed:
                    left.append(f"brain {brain['id']} ({failed})")
        if left:
            raise Failed("left behind, delete by hand: " + "; ".join(left))
        return "deleted " + " and ".join(reversed(deleted))


def discovery_urls(issuer: str) -> list[str]:
    """Where an authorization server's metadata may be (RFC 8414 and OpenID Connect, as MCP clients look)."""
    parts = urlsplit(issuer)
    root, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    if not path:
        return [f"{root}/.well-known/oauth-authorization-server", f"{root}/.well-known/openid-configuration"]
    return [
        f"{root}/.well-known/oauth-authorization-server{path}",
        f"{root}/.well-known/openid-configuration{path}",
        f"{root}{path}/.well-known/openid-configuration",
    ]


def _json(response: httpx2.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def _json_text(result: Any) -> dict[str, Any]:
    try:
        value = json.loads(_text(result))
    except ValueError:
        raise Failed(f"not a JSON answer: {_excerpt(_text(result))}") from None
    return value if isinstance(value, dict) else {}


def _payload(answer: Any) -> str:
    """An answer as text to look for the marker in: a REST body or a tool result."""
    if hasattr(answer, "status_code"):  # an HTTP response
        return str(answer.text)
    structured = getattr(answer, "structured_content", None)
    return json.dumps(structured) if structured else _text(answer)


def _excerpt(text: str, limit: int = 240) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(inner) for inner in error.exceptions)
    return _excerpt(f"{type(error).__name__}: {error}")
