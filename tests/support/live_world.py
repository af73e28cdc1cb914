"""A live server over the visibility world (tests/support/visibility_world.py) on each shape, with
the matrix's principals, and what a test needs to look for an erased subject in every store."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import numpy as np
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from cairn.adapters.aws.s3_blobs import S3BlobStore
from cairn.adapters.local.file_blobs import FileBlobStore
from cairn.auth.principal import ADMIN, READ, WRITE
from cairn.bootstrap import Container, build_container
from cairn.config import Settings
from cairn.ports.records import MAX_SCAN_PREFIXES, Item
from tests.contract.aws_storage import BUCKET
from tests.integration.auth.jwks_server import jwks_server
from tests.integration.mcp.conftest import ServerThread
from tests.support.shapes import SHAPES, adapters_with
from tests.support.visibility_world import USERS, DataSet, build
from tests.unit.auth.tokens import AUDIENCE, ISSUER, claims, jwks, rsa_key

OWNER_TOKEN = "owner-static-token"
EVERY_KEY = [chr(c) for c in range(33, 127)]
"""One-character prefixes of every printable key: a scan of everything the record store holds."""


@dataclass
class Live:
    base: str
    container: Container
    sets: dict[str, DataSet]
    credentials: dict[str, str]
    shape: str
    data: Path

    def rest(
        self, method: str, path: str, who: str = "owner", headers: dict[str, str] | None = None, **kwargs: Any
    ) -> httpx.Response:
        sent = {"authorization": f"Bearer {self.credentials[who]}", **(headers or {})}
        return httpx.request(method, f"{self.base}{path}", headers=sent, timeout=120, **kwargs)

    async def tool(self, surface_path: str, tool: str, args: dict[str, Any], who: str = "owner") -> str:
        """The answer of one tool call (result or error) as text."""
        http = httpx2.AsyncClient(headers={"authorization": f"Bearer {self.credentials[who]}"}, timeout=120)
        async with Client(streamable_http_client(f"{self.base}{surface_path}", http_client=http)) as client:
            try:
                result = await client.call_tool(tool, args)
            except MCPError as exc:
                return json.dumps({"error": exc.message, "data": exc.data}, default=str)
        return json.dumps(
            {"content": [b.model_dump() for b in result.content], "structured": result.structured_content},
            default=str,
        )

    async def tool_json(self, surface_path: str, tool: str, args: dict[str, Any], who: str = "owner") -> Any:
        """A tool's answer as JSON: its structured content, else its text block parsed, or
        {"error", "data"} for a JSON-RPC error."""
        answer = json.loads(await self.tool(surface_path, tool, args, who))
        if "error" in answer:
            return answer
        if answer["structured"] is not None:
            return answer["structured"]
        return json.loads(answer["content"][0]["text"])

    def records(self) -> Iterator[Item]:
        """Every record the store holds."""
        for start in range(0, len(EVERY_KEY), MAX_SCAN_PREFIXES):
            cursor: str | None = None
            while True:
                page = self.container.adapters.records.scan(
                    EVERY_KEY[start : start + MAX_SCAN_PREFIXES], cursor=cursor
                )
                yield from page.items
                if page.cursor is None:
                    break
                cursor = page.cursor

    def records_holding(self, *needles: str) -> list[tuple[str, str]]:
        """(pk, sk) of every record whose key or data holds one of the needles."""
        found = []
        for item in self.records():
            text = item.pk + item.sk + json.dumps(item.data)
            if any(n in text for n in needles):
                found.append((item.pk, item.sk))
        return found

    def blobs_holding(self, needle: bytes) -> list[str]:
        """Keys of the stored bytes (every version S3 keeps) that hold `needle`."""
        blobs = self.container.adapters.blobs
        if isinstance(blobs, FileBlobStore):
            return [str(p) for p in blobs.root.rglob("*") if p.is_file() and needle in p.read_bytes()]
        assert isinstance(blobs, S3BlobStore)
        found = []
        pages = blobs.client.get_paginator("list_object_versions").paginate(Bucket=BUCKET)
        for page in pages:
            for version in page.get("Versions", []):
                body = blobs.client.get_object(
                    Bucket=BUCKET, Key=version["Key"], VersionId=version["VersionId"]
                )
                if needle in body["Body"].read():
                    found.append(version["Key"])
        return found

    def files_holding(self, needle: bytes) -> list[str]:
        """The embedded store's own files (databases, their logs, vector files) holding `needle`."""
        return [
            str(p)
            for p in self.data.rglob("*")
            if p.is_file() and "blobs" not in p.parts and needle in p.read_bytes()
        ]

    def vectors_of(self, data: DataSet) -> np.ndarray:
        """The stored vectors of a set's chunks (as the index lends them to a rewrite)."""
        held = self.container.adapters.chunks.get_vectors(
            data.brain.id, sorted(i for i in data.ids if i.startswith("chk_"))
        )
        return np.concatenate([np.asarray(v, dtype=np.float32).reshape(1, -1) for v in held.values()])

    def vector_rows_near(self, wanted: np.ndarray) -> int:
        """How many rows of the embedded store's vector files are (nearly) one of `wanted`: what
        an erased chunk would leave in the vector files."""
        near = 0
        for path in (self.data / "vectors").glob("*.f32"):
            rows = np.fromfile(path, dtype=np.float32)
            rows = rows[: rows.size - rows.size % wanted.shape[1]].reshape(-1, wanted.shape[1])
            if rows.size:
                norms = np.linalg.norm(rows, axis=1, keepdims=True)
                unit = rows / np.where(norms == 0, 1, norms)
                near += int((unit @ wanted.T > 0.999).any(axis=1).sum())
        return near


@pytest.fixture(params=SHAPES)
def live(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Live]:
    with live_world(request.param, tmp_path, request.getfixturevalue("monkeypatch")) as world:
        yield world


@contextmanager
def live_world(shape: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Live]:
    """The live world on `shape` under `tmp_path`, served until the block ends."""
    signer = rsa_key("k1")
    with jwks_server(jwks(signer)) as issuer_keys, adapters_with(shape, monkeypatch, tmp_path) as adapters:
        (tmp_path / "ingest-root").mkdir()
        settings = Settings(
            data_dir=tmp_path / "data",
            ingest_root=tmp_path / "ingest-root",
            token=OWNER_TOKEN,
            jwt_issuer=ISSUER,
            jwt_jwks_url=issuer_keys.url,
            jwt_audience=[AUDIENCE],
            rate_limit_per_s=0,
        )
        c = build_container(settings, adapters)
        sets = build(c)
        now = time.time()
        credentials = {
            "owner": OWNER_TOKEN,
            "key_a": c.keys.create(
                name="a", tenant="local", scopes=[READ, WRITE], brains=[sets["A"].brain.id]
            ).plaintext,
            "read_only": c.keys.create(name="reader", tenant="local", scopes=[READ]).plaintext,
            "other_tenant": c.keys.create(name="acme", tenant="acme", scopes=[READ, WRITE, ADMIN]).plaintext,
            "user_x": signer.sign(claims(now=now, sub=USERS["X"], tenant="local", scope=f"{READ} {WRITE}")),
        }
        with ServerThread(c) as st:
            yield Live(f"http://127.0.0.1:{st.port}", c, sets, credentials, shape, tmp_path / "data")
