"""The Mnemosyne surface on a live server (fake adapters) and helpers for the official MCP client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.services.mnemosyne.libraries import Library
from tests.integration.mcp.conftest import LiveServer, start_server

PATH = "/mcp/mnemosyne/"


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(tmp_path, token="sekret-owner-token")


def mnemosyne(live: LiveServer, credential: str | None = "sekret-owner-token", path: str = PATH) -> Client:
    """The official MCP client over streamable HTTP, with `credential` as a bearer token (or none)."""
    headers = {"authorization": f"Bearer {credential}"} if credential else {}
    http = httpx2.AsyncClient(headers=headers, timeout=30)
    return Client(streamable_http_client(f"{live.base}{path}", http_client=http))


def body(result: CallToolResult) -> Any:
    """A successful answer: the object as structuredContent and as indented JSON text."""
    assert not result.is_error, result.content
    block = result.content[0]
    assert block.type == "text"
    value = json.loads(block.text)
    assert block.text == json.dumps(value, indent=2, ensure_ascii=False)
    assert result.structured_content == value
    return value


def failure(result: CallToolResult) -> str:
    assert result.is_error, result.content
    block = result.content[0]
    assert block.type == "text"
    return block.text


@dataclass
class Shelf:
    """Two libraries of different types, a collection, and items in them."""

    novels: Library
    manuals: Library
    series_uid: str


NOVEL = (
    "# Chapter One\n\nElizabeth Bennet walked the three miles to Netherfield Park in the rain, her "
    "petticoat six inches deep in mud. Mr. Darcy watched from the window and said nothing.\n\n"
    "* * *\n\nAt Longbourn, Mrs. Bennet declared that Jane must marry Mr. Bingley before the winter."
)
SEQUEL = "# Chapter Two\n\nLydia eloped with Wickham to Brighton, and the Bennet family despaired."
MANUAL = (
    "# Installing the pump\n\nBolt the Hydrex 40 pump to the frame with four M8 bolts torqued to "
    "25 Nm. Prime it with water before the first start.\n\n```\nhydrexctl prime --litres 2\n```\n"
)


def stock(c: Container) -> Shelf:
    novels = c.libraries.describe(
        c.brains.create("Austen novels", slug="austen").id, library_type="fiction", description="Novels"
    )
    manuals = c.libraries.describe(c.brains.create("Pump manuals", slug="pumps").id, library_type="technical")
    series = c.libraries.create_collection(novels, "Pride and Prejudice", description="The novel")
    ingest(c, novels.brain, f"{series.folder}/chapter-1.md", NOVEL)
    ingest(c, novels.brain, "loose/chapter-2.md", SEQUEL)
    ingest(c, manuals.brain, "pumps/hydrex.md", MANUAL)
    return Shelf(c.libraries.library(novels.uid), c.libraries.library(manuals.uid), series.uid)


def ingest(c: Container, brain: Brain, path: str, text: str) -> str:
    result = c.ingest.ingest_bytes(brain, text.encode(), name=path.rsplit("/", 1)[-1], path=path)
    return result.document_id
