"""The fixture and the per-surface adapters of bench/relevance.py: how each MCP surface is seeded with
the team-memory corpus through its own write path, how its search tools are called, and how every
result is mapped back to a fixture item id.

- canonical: brain `rel-canonical`, memory_remember (title, tags, the default path); memory_search,
  score `hits[].score`.
- zengram: brain `rel-zengram` (CAIRN_ZENGRAM_BRAIN), brain_store with a type, category and knowledge
  category per kind; brain_search, score `effective_score`.
- gbrain: collection `rel-gbrain`, brain_put at slug `<wing>/<id>` (title in frontmatter and heading);
  brain_query and brain_search, score `score`.
- thoughtmcp: user `relevance-bench`, remember with a sector per kind (tags and kind in metadata);
  recall with text (`score`, the total), search as typed and as an OR of content words (`rank`).
- mnemosyne: library `rel-mnemosyne` (type business), `cairn ingest --collection`; search within the
  library, score `score`.

Mnemosyne's MCP surface has no write tool (search, get_chunk and four listings): a library is filled
by `cairn ingest`, as docs/MNEMOSYNE.md sets one up, so that surface is seeded before the server
starts. Titles go where a surface has a place for them (memory_remember's title, a page's frontmatter
and heading, the ingested file's heading); zengram and ThoughtMCP store the text alone. A fact that
supersedes an earlier one (`supersedes` in the fixture) is stored after it; on zengram both carry
one fact `key`, so the later one supersedes the earlier as zengram's own upsert does.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

FIXTURE = Path(__file__).resolve().parent / "data" / "relevance" / "team_memory.json"
USER = "relevance-bench"
AGENT = "relevance-bench"


# -- the fixture -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    id: str
    kind: str
    title: str
    tags: tuple[str, ...]
    text: str
    supersedes: str | None = None


@dataclass(frozen=True)
class Query:
    id: str
    style: str
    text: str
    relevant: tuple[str, ...]

    @property
    def labelled(self) -> bool:
        return bool(self.relevant)


def load_fixture(path: Path = FIXTURE) -> tuple[list[Item], list[Query]]:
    raw = json.loads(path.read_text())
    items = [
        Item(x["id"], x["kind"], x["title"], tuple(x["tags"]), x["text"], x.get("supersedes"))
        for x in raw["items"]
    ]
    queries = [Query(x["id"], x["style"], x["text"], tuple(x["relevant"])) for x in raw["queries"]]
    known = {i.id for i in items}
    for q in queries:
        missing = set(q.relevant) - known
        if missing:
            raise SystemExit(f"query {q.id} names unknown items {sorted(missing)}")
    return items, queries


def supersede_keys(items: Sequence[Item]) -> dict[str, str]:
    """A shared key for every item of a supersede chain (the oldest item's id names it)."""
    by_id = {i.id: i for i in items}

    def root(item: Item) -> str:
        while item.supersedes:
            item = by_id[item.supersedes]
        return item.id

    chained = {i.id for i in items if i.supersedes} | {i.supersedes for i in items if i.supersedes}
    return {item_id: f"team-{root(by_id[item_id])}" for item_id in chained if item_id}


# -- results ---------------------------------------------------------------------------------------


@dataclass
class Ranked:
    """One search call's results, best first."""

    keys: list[str] = field(default_factory=list)
    """Each result's own handle (path, slug, memory id, chunk id)."""
    ids: list[str | None] = field(default_factory=list)
    """The fixture item each result maps to, None where none could be found."""
    scores: list[float] = field(default_factory=list)
    error: str | None = None
    ms: float = 0.0

    def add(self, key: str, item_id: str | None, score: Any) -> None:
        self.keys.append(key)
        self.ids.append(item_id)
        self.scores.append(float(score) if score is not None else float("nan"))

    @property
    def top_score(self) -> float | None:
        return self.scores[0] if self.scores else None


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", text)).strip().lower()


class Mapper:
    """Result handle -> item id, learnt from the write calls; content as the fallback."""

    def __init__(self, items: Sequence[Item]) -> None:
        self.by_key: dict[str, str] = {}
        self.by_title = {i.title: i.id for i in items}
        self.texts = [(normalise(i.text), i.id) for i in items]

    def learn(self, key: str, item_id: str) -> None:
        self.by_key[key] = item_id

    def __call__(self, key: str | None, content: str | None = None) -> str | None:
        if key is not None and key in self.by_key:
            return self.by_key[key]
        if content:
            found = normalise(content)
            for text, item_id in self.texts:
                # a preview may be cut: either contains the other's first 80 characters
                if text[:80] in found or (len(found) >= 40 and found[:80] in text):
                    return item_id
        return None


# -- calling tools ---------------------------------------------------------------------------------


class ToolFailed(Exception):
    pass


def text_of(result: Any) -> str:
    if result.is_error:
        body = " ".join(getattr(block, "text", "") for block in result.content)
        raise ToolFailed(body[:300])
    text: str = result.content[0].text
    return text


async def call_json(client: Any, tool: str, arguments: dict[str, Any]) -> Any:
    from mcp.shared.exceptions import MCPError

    try:
        result = await client.call_tool(tool, arguments)
    except MCPError as e:  # gbrain answers every failure as a JSON-RPC error
        raise ToolFailed(f"{tool}: JSON-RPC {e}") from e
    if result.structured_content is not None and not result.is_error:
        return result.structured_content
    text = text_of(result)
    try:
        return json.loads(text)
    except ValueError:
        return text


# -- the surfaces ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tool:
    label: str
    """`<surface> <tool>`, plus a variant where one tool is called two ways."""
    score_field: str
    diagnostic: bool = False
    """Not an MCP tool: measured first, left out of the churn (zengram's read-only API search)."""


class Surface:
    name: str
    path: str
    tools: tuple[Tool, ...]
    env: ClassVar[dict[str, str]] = {}
    """Environment `cairn serve` needs for this surface."""

    def __init__(self, items: Sequence[Item]) -> None:
        self.items = list(items)
        self.map = Mapper(items)

    base = ""

    def client(self, base: str) -> Any:
        from mcp import Client

        self.base = base
        return Client(base + self.path, read_timeout_seconds=120)

    def offline_setup(self, cairn: Path, data_dir: Path, work: Path) -> None:
        """Anything to do on the data dir before the server starts (Mnemosyne only)."""

    async def prepare(self, client: Any, canonical: Any) -> None:
        """Before seeding, with this surface's client and the canonical one (to make brains)."""

    async def seed(self, client: Any) -> None:
        raise NotImplementedError

    async def search(self, client: Any, tool: Tool, query: str) -> Ranked:
        raise NotImplementedError


async def create_brain(canonical: Any, name: str, slug: str) -> None:
    await call_json(canonical, "memory_create_brain", {"name": name, "slug": slug})


class Canonical(Surface):
    name = "canonical"
    path = "/mcp"
    brain = "rel-canonical"
    tools = (Tool("canonical memory_search", "hits[].score (blend over best x best relevance)"),)

    async def prepare(self, client: Any, canonical: Any) -> None:
        await create_brain(canonical, "Relevance canonical", self.brain)

    async def seed(self, client: Any) -> None:
        for item in self.items:
            doc = await call_json(
                client,
                "memory_remember",
                {"brain": self.brain, "content": item.text, "title": item.title, "tags": list(item.tags)},
            )
            self.map.learn(doc["path"], item.id)

    async def search(self, client: Any, tool: Tool, query: str) -> Ranked:
        body = await call_json(client, "memory_search", {"brain": self.brain, "query": query})
        out = Ranked()
        for hit in body["hits"]:
            out.add(hit["path"], self.map(hit["path"], hit["content"]), hit["score"])
        return out


ZENGRAM_TYPE = {
    "fact": "fact", "person": "fact", "customer": "fact", "supplier": "fact", "preference": "fact",
    "howto": "fact", "decision": "decision", "incident": "event",
}  # fmt: skip
ZENGRAM_CATEGORY = {"incident": "episodic", "howto": "procedural"}  # else semantic
ZENGRAM_KNOWLEDGE = {
    "fact": "technical", "howto": "technical", "incident": "technical", "person": "relationship",
    "customer": "relationship", "supplier": "relationship", "decision": "strategy",
    "preference": "general",
}  # fmt: skip


class Zengram(Surface):
    name = "zengram"
    path = "/mcp/zengram"
    brain = "rel-zengram"
    env: ClassVar[dict[str, str]] = {"CAIRN_ZENGRAM_BRAIN": brain}
    tools = (
        Tool("zengram brain_search", "effective_score"),
        Tool("zengram API read_only", "effective_score, accesses not counted", diagnostic=True),
    )

    async def prepare(self, client: Any, canonical: Any) -> None:
        await create_brain(canonical, "Relevance zengram", self.brain)

    async def seed(self, client: Any) -> None:
        keys = supersede_keys(self.items)
        for item in self.items:
            kind = ZENGRAM_TYPE[item.kind]
            arguments: dict[str, Any] = {
                "type": kind,
                "content": item.text,
                "source_agent": AGENT,
                "category": ZENGRAM_CATEGORY.get(item.kind, "semantic"),
                "knowledge_category": ZENGRAM_KNOWLEDGE[item.kind],
            }
            if kind == "fact" and item.id in keys:
                arguments["key"] = keys[item.id]
            stored = await call_json(client, "brain_store", arguments)
            if stored.get("deduplicated"):
                raise SystemExit(f"zengram deduplicated {item.id}: {stored}")
            self.map.learn(stored["id"], item.id)

    async def search(self, client: Any, tool: Tool, query: str) -> Ranked:
        if tool.diagnostic:
            body = await self.read_only(query)
        else:
            body = await call_json(client, "brain_search", {"query": query})
        out = Ranked()
        for row in body["results"]:
            out.add(row["id"], self.map(row["id"], row.get("content")), row["effective_score"])
        return out

    async def read_only(self, query: str) -> Any:
        """zengram's HTTP API search (what brain_search calls) with Cairn's `read_only=true`, which
        leaves the access counts alone: the ranking without brain_search's access boost."""
        import httpx

        async with httpx.AsyncClient(headers={"x-api-key": "relevance-bench"}, timeout=120) as http:
            params = {"q": query, "format": "compact", "read_only": "true"}
            response = await http.get(f"{self.base}/zengram/memory/search", params=params)
        if response.status_code != 200:
            raise ToolFailed(f"GET /zengram/memory/search: {response.status_code} {response.text[:200]}")
        return response.json()


GBRAIN_WING = {
    "fact": "facts", "decision": "decisions", "incident": "incidents", "person": "people",
    "customer": "customers", "supplier": "suppliers", "preference": "preferences", "howto": "howtos",
}  # fmt: skip


class Gbrain(Surface):
    name = "gbrain"
    path = "/mcp/gbrain"
    collection = "rel-gbrain"
    tools = (
        Tool("gbrain brain_query", "score (0.4 bm25/best + 0.6 cosine/best, x best relevance)"),
        Tool("gbrain brain_search", "score (BM25)"),
    )

    async def prepare(self, client: Any, canonical: Any) -> None:
        await create_brain(canonical, "Relevance gbrain", self.collection)

    async def seed(self, client: Any) -> None:
        for item in self.items:
            slug = f"{GBRAIN_WING[item.kind]}/{item.id}"
            content = f"---\ntitle: {item.title}\ntype: {item.kind}\n---\n# {item.title}\n\n{item.text}\n"
            await call_json(client, "brain_put", {"slug": f"{self.collection}::{slug}", "content": content})
            self.map.learn(f"{self.collection}::{slug}", item.id)

    async def search(self, client: Any, tool: Tool, query: str) -> Ranked:
        name = tool.label.split()[1]
        body = await call_json(client, name, {"query": query, "collection": self.collection})
        out = Ranked()
        for hit in body:
            out.add(hit["slug"], self.map(hit["slug"], hit.get("summary")), hit["score"])
        return out


THOUGHT_SECTOR = {"incident": "episodic", "howto": "procedural", "decision": "reflective"}  # else semantic
STOPWORDS = frozenset({
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "to", "of", "in", "on", "for", "and", "or",
    "with", "by", "at", "from", "our", "we", "i", "do", "does", "did", "how", "what", "when", "where",
    "which", "who", "whom", "whose", "why", "can", "should", "must", "ever", "it", "its", "their", "there",
    "this", "that", "as", "after", "before", "into", "over", "about", "any", "all", "my", "me", "her",
    "she", "he", "his", "they", "them", "you", "your", "us", "not", "no", "since", "than", "then", "so",
    "s", "get", "got", "has", "have", "had", "will", "would",
})  # fmt: skip


def content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS]


class ThoughtMcp(Surface):
    name = "thoughtmcp"
    path = "/mcp/thoughtmcp"
    tools = (
        Tool("thoughtmcp recall", "score: the total (0.6 relevance + 0.2 salience + 0.1 recency, 0.1 links)"),
        Tool("thoughtmcp search", "rank (BM25); the query as typed, terms ANDed"),
        Tool("thoughtmcp search OR", "rank (BM25); content words joined by OR"),
    )

    async def seed(self, client: Any) -> None:
        for item in self.items:
            answer = await call_json(
                client,
                "remember",
                {
                    "content": item.text,
                    "userId": USER,
                    "sessionId": "team-memory",
                    "primarySector": THOUGHT_SECTOR.get(item.kind, "semantic"),
                    "metadata": {"tags": list(item.tags), "category": item.kind},
                },
            )
            if not answer.get("success"):
                raise SystemExit(f"remember {item.id} failed: {answer}")
            self.map.learn(answer["data"]["memoryId"], item.id)

    async def search(self, client: Any, tool: Tool, query: str) -> Ranked:
        out = Ranked()
        if tool.label.endswith("recall"):
            answer = await call_json(client, "recall", {"userId": USER, "text": query})
        else:
            text = query if tool.label.endswith("search") else " OR ".join(content_words(query))
            answer = await call_json(client, "search", {"userId": USER, "text": text})
        if not answer.get("success"):
            out.error = str(answer.get("error"))[:200]
            return out
        for memory in answer["data"]["memories"]:
            score = memory["score"] if "score" in memory else memory["rank"]
            out.add(memory["id"], self.map(memory["id"], memory["content"]), score)
        return out


class Mnemosyne(Surface):
    name = "mnemosyne"
    path = "/mcp/mnemosyne/"
    library = "rel-mnemosyne"
    library_name = "Relevance team library"
    tools = (Tool("mnemosyne search", "score (RRF of vector, fulltext, graph over best x best relevance)"),)
    library_uid: str | None = None

    def client(self, base: str) -> Any:
        import httpx2
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        self.base = base
        # any bearer token on the open loopback server: without one only get_health answers
        http = httpx2.AsyncClient(headers={"authorization": "Bearer relevance-bench"}, timeout=120)
        return Client(streamable_http_client(base + self.path, http_client=http), read_timeout_seconds=120)

    def offline_setup(self, cairn: Path, data_dir: Path, work: Path) -> None:
        folder = work / "team-memory"
        folder.mkdir(parents=True)
        for item in self.items:
            (folder / f"{item.id}.md").write_text(f"# {item.title}\n\n{item.text}\n")
        common = ["--data-dir", str(data_dir)]
        for command in (
            ["brains", "create", self.library_name, "--slug", self.library, "--library-type", "business",
             "--description", "A software company's team memory"],
            ["ingest", str(folder), "--brain", self.library, "--collection", "Team memory"],
        ):  # fmt: skip
            done = subprocess.run([str(cairn), *command, *common], capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"cairn {command[0]} failed: {done.stderr[-2000:]}")

    async def prepare(self, client: Any, canonical: Any) -> None:
        body = await call_json(client, "list_libraries", {"limit": 200})
        found = [lib["uid"] for lib in body["libraries"] if lib["name"] == self.library_name]
        if not found:
            raise SystemExit(f"no library {self.library_name!r} among {body['libraries']}")
        self.library_uid = found[0]
        listed = await call_json(client, "list_items", {"library_uid": self.library_uid, "limit": 200})
        for row in listed["items"]:
            if row["title"] in self.map.by_title:
                self.map.learn(row["uid"], self.map.by_title[row["title"]])

    async def seed(self, client: Any) -> None:
        """Seeded before the server started (offline_setup); the items were mapped in prepare."""

    async def search(self, client: Any, tool: Tool, query: str) -> Ranked:
        body = await call_json(client, "search", {"query": query, "library_uid": self.library_uid})
        out = Ranked()
        for found in body["candidates"]:
            item_id = self.map(found["item_uid"], None) or self.map.by_title.get(found["item_title"])
            out.add(found["chunk_uid"], item_id or self.map(None, found["text_preview"]), found["score"])
        return out


SURFACES: dict[str, type[Surface]] = {
    s.name: s for s in (Canonical, Zengram, Gbrain, ThoughtMcp, Mnemosyne)
}  # fmt: skip
