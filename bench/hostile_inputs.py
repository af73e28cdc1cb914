"""Print the CPU time Cairn spends on small inputs built to be expensive, in process.

Each was once far slower than its size (docs/PERFORMANCE.md, "Hostile inputs"): a file any key
that may write can ingest, or a query any key that may read can send.

    .venv/bin/python bench/hostile_inputs.py [--case json ...]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from pathlib import Path


def deep_json() -> bytes:
    """62 KB of JSON: 30,000 numbers in lists nested 900 deep (each indented 1,800 spaces)."""
    return b"[" * 900 + b",".join([b"0"] * 30_000) + b"]" * 900


def table_html() -> bytes:
    """400 KB of table cells."""
    return b"<table><tr>" + b"<td>x</td>" * 40_000 + b"</tr></table>"


def unclosed_tags(size: int = 60_000) -> bytes:
    """`size` bytes of `<a `: tags that never close (CPython gh-135462)."""
    return b"<a " * (size // 3)


def ordinary_page() -> bytes:
    """400 KB of an ordinary article (headings, paragraphs, links, lists, a table, code), for
    comparison: not hostile."""
    section = (
        "<h2>Section {n}</h2><p>The <a href='/kettle/{n}'>kettle</a> descales on <em>Fridays</em>; "
        "café &amp; bar, <code>make check</code> passes.</p><ul><li>First step</li><li>Second "
        "<strong>step</strong></li></ul><table><tr><th>Name</th><th>Value</th></tr><tr><td>a</td>"
        "<td>{n}</td></tr></table><pre>line one\n  line two</pre><p>More text about boilers, "
        "pumps and the weir below the mill, kept for the test of ordinary pages.</p>\n"
    )
    body = "".join(section.format(n=n) for n in range(950))
    head = "<!doctype html><html><head><meta charset='utf-8'><title>Page</title></head><body><main>"
    return (head + body + "</main></body></html>").encode()


def images(text: str, path: str) -> Callable[[], str]:
    def run() -> str:
        from cairn.ingest.image_references import find_image_references

        return f"{len(find_image_references(text, path))} images"

    return run


def spaced_heading() -> bytes:
    """A Markdown heading holding a run of 40,000 spaces."""
    return b"# a" + b" " * 40_000 + b"b\n\nbody\n"


def shared_stream_pdf(pages: int = 100) -> bytes:
    """`pages` pages drawn by one compressed content stream: ten lines of text among 30,000 path
    operators (a few KB of file, a parse of ~0.5 MB a page)."""
    text = b"".join(
        b"BT /F1 10 Tf 20 %d Td (line %d of the shared page) Tj ET\n" % (800 - i, i) for i in range(10)
    )
    content = zlib.compress(text + b"0 0 m 1 1 l S\n" * 30_000)
    kids = " ".join(f"{5 + i} 0 R" for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>",
    ]
    objects += [b"<< /Type /Page /Parent 2 0 R /Contents 3 0 R /Resources 4 0 R >>"] * pages
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % at for at in offsets)
    return out + b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)


def described_png(values: int = 45_000) -> bytes:
    """A 1x1 PNG whose XMP packet (an iTXt chunk, 1 MB) gives `values` distinct descriptions."""
    items = "".join(f"<rdf:li>d{n}</rdf:li>" for n in range(values))
    xmp = (
        '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"'
        ' xmlns:dc="http://purl.org/dc/elements/1.1/"><rdf:Description><dc:description><rdf:Alt>'
        f"{items}</rdf:Alt></dc:description></rdf:Description></rdf:RDF></x:xmpmeta>"
    ).encode()
    body = b"XML:com.adobe.xmp\x00\x00\x00\x00\x00" + xmp
    itxt = len(body).to_bytes(4, "big") + b"iTXt" + body + zlib.crc32(b"iTXt" + body).to_bytes(4, "big")
    ihdr = b"IHDR" + (1).to_bytes(4, "big") * 2 + b"\x08\x00\x00\x00\x00"
    idat = b"IDAT" + zlib.compress(b"\x00\x00")

    def chunk(typed: bytes) -> bytes:
        return (len(typed) - 4).to_bytes(4, "big") + typed + zlib.crc32(typed).to_bytes(4, "big")

    return b"\x89PNG\r\n\x1a\n" + chunk(ihdr) + itxt + chunk(idat) + chunk(b"IEND")


def keyword_bomb_png(chunks: int = 256) -> bytes:
    """A 272 KB PNG: after its image data, `chunks` zTXt Keywords chunks each inflating ~1 KB to
    1 MiB of commas."""
    body = b"Keywords\x00\x00" + zlib.compress(b"," * (1 << 20), 9)
    ztxt = len(body).to_bytes(4, "big") + b"zTXt" + body + zlib.crc32(b"zTXt" + body).to_bytes(4, "big")
    png = described_png(0)
    iend = png.rindex(b"IEND") - 4
    return png[:iend] + ztxt * chunks + png[iend:]


def many_speakers(speakers: int = 1_000) -> str:
    """Rule-based fact extraction from 24 KB of messages, each from another speaker."""
    from datetime import datetime

    from cairn.adapters.local.rule_facts import RuleFactExtractor
    from cairn.ports.facts import Utterance

    said = [
        Utterance(str(i), f"Speaker{i}", "user", f"I like tea{i}.", datetime(2024, 5, 1))
        for i in range(speakers)
    ]
    return f"{len(RuleFactExtractor().extract(said)):,} facts"


def fact_abbreviations(size: int = 1_000_000) -> str:
    """Rule-based fact extraction from one session message of 1 MB (its most) of `Dr. `: to the
    rules one line of sentence ends that an abbreviation ends none of."""
    from datetime import datetime

    from cairn.adapters.local.rule_facts import RuleFactExtractor
    from cairn.ports.facts import Utterance

    said = [Utterance("1", "Alice", "user", "Dr. " * (size // 4), datetime(2024, 5, 1))]
    return f"{size:,} characters, {len(RuleFactExtractor().extract(said)):,} facts"


def extraction(data: bytes, kind: str) -> Callable[[], str]:
    def run() -> str:
        from cairn.domain.errors import CairnError
        from cairn.ingest.extract import extract_text

        try:
            return f"{len(extract_text(data, kind, f'file.{kind}').text):,} characters"
        except CairnError as exc:
            return f"refused: {exc.message}"

    return run


def long_query() -> str:
    """A search of 3.5 MB of words on the embedded store (read up to 4,096 characters)."""
    from cairn.bootstrap import build_container
    from cairn.config import Settings

    with tempfile.TemporaryDirectory() as data:
        container = build_container(Settings(data_dir=Path(data)))
        brain = container.brains.create("Notes", slug="notes")
        container.documents.write(brain, "notes/kettle.md", b"The kettle descales on Fridays.")
        query = "kettle descales " + " ".join(f"word{i}" for i in range(400_000))
        started = time.process_time()
        hits = container.search.search(brain, query).hits
        took = time.process_time() - started
    return f"{len(query):,} characters, {len(hits)} hits, the search alone {took:.2f} s"


def archive_links(links: int = 28_000) -> str:
    """A 4 MB archive part (POST /v1/archive/import) of 28,000 links from one document, each
    starting at another second, restored into the embedded store."""
    import json
    from datetime import datetime, timedelta

    from cairn.bootstrap import build_container
    from cairn.config import Settings

    head = {"kind": "cairn-archive", "format": 2, "brain": {"slug": "notes", "name": "Notes"}}
    records: list[dict[str, object]] = [
        {**head, "exported_at": "2026-01-01T00:00:00Z"},
        {"kind": "document", "path": "a.md", "content": "a"},
        {"kind": "document", "path": "b.md", "content": "b"},
    ]
    for i in range(links):
        start = (datetime(2000, 1, 1) + timedelta(seconds=i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        link = {"source": "a.md", "target": "b.md", "relationship": "r", "valid_from": start}
        records.append({"kind": "link", "id": i, **link, "created_at": "2026-01-01T00:00:00Z"})
    size = sum(len(json.dumps(r, separators=(",", ":"))) + 1 for r in records)
    with tempfile.TemporaryDirectory() as data:
        container = build_container(Settings(data_dir=Path(data)))
        started = time.process_time()
        report = container.archive.import_(None, records, part=True)
        took = time.process_time() - started
    return f"{size:,} bytes, {report.written['link']:,} links, the import alone {took:.2f} s"


def graph_dead_links(links: int = 50_000) -> str:
    """A graph walk at brain_graph's default caps from a page of 50,000 links on the embedded store,
    every tenth to one of ten pages and the others to pages deleted since or closed; the targets of
    the open links are looked up by id (the batch read brain_graph's page names begin with)."""
    from cairn.bootstrap import build_container
    from cairn.config import Settings
    from cairn.services.links.graph import LinkDraft

    with tempfile.TemporaryDirectory() as data:
        container = build_container(Settings(data_dir=Path(data)))
        brain = container.brains.create("Notes", slug="notes")
        write = container.documents.write
        pages = [write(brain, f"p{i}.md", b"a page").document.id for i in range(11)]
        drafts = []
        for i in range(links):
            target = pages[1 + i // 10 % 10] if i % 10 == 0 else f"doc_gone_{i}"
            drafts.append(LinkDraft(pages[0], target, "r", valid_until="2020-01" if i % 10 == 5 else None))
        container.graph.add_many(brain, drafts)
        asked = 0

        def live(ids: list[str]) -> set[str]:
            nonlocal asked
            asked += len(ids)
            return set(container.documents.repo.get_many_by_id(ids))

        started = time.process_time()
        hood = container.graph.graph(brain, pages[0], live=live)
        took = time.process_time() - started
    return f"{len(hood.edges):,} edges, {asked:,} pages read, the walk alone {took:.2f} s"


def concept_honorifics(size: int = 5_000_000) -> str:
    """A 5 MB document of `Mr `: the concept rules read its first 200,000 characters
    (concepts.MAX_TEXT_CHARS), one run of 66,666 capitalised honorifics."""
    from cairn.services.memory.entity_rules import RuleEntityExtractor
    from cairn.services.mnemosyne.concept_rules import ConceptRules
    from cairn.services.mnemosyne.concepts import MAX_TEXT_CHARS

    text = "Mr " * (size // 3)
    found = ConceptRules(RuleEntityExtractor()).extract(text[:MAX_TEXT_CHARS])
    return f"{len(text):,} characters, {len(found)} concepts"


def concept_chunks(size: int = 5_000_000) -> str:
    """A 5 MB document naming 200 codes in its first lines, then chunks of 2,000 characters each
    holding a dotless i (not `plain`, domain/plain_text.py): the concept graph links each chunk."""
    from datetime import UTC, datetime

    from cairn.domain.models import Chunk
    from cairn.services.links.repository import LinkRepository
    from cairn.services.memory.entity_rules import RuleEntityExtractor
    from cairn.services.mnemosyne.concept_rules import ConceptRules
    from cairn.services.mnemosyne.concepts import ConceptGraph

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fakes.chunks import MemoryChunkIndex
    from tests.fakes.clock import FakeClock
    from tests.fakes.records import MemoryRecordStore

    head = " ".join(f"Q{i:03d}X" for i in range(200)) + ".\n\n"
    body = ("plaın words go here and there " * 70)[:2_000]
    texts = [head, *[body] * ((size - len(head)) // len(body))]
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    chunks = [
        Chunk(
            id=f"chk_{n}",
            brain_id="brn",
            document_id="doc",
            path="a.md",
            ordinal=n,
            text=t,
            created_at=moment,
        )
        for n, t in enumerate(texts)
    ]
    graph = ConceptGraph(
        LinkRepository(MemoryRecordStore()),
        ConceptRules(RuleEntityExtractor()),
        MemoryChunkIndex(8),
        FakeClock(),
    )
    started = time.process_time()
    links = graph.index("brn", "".join(texts), chunks, fresh=True)
    took = time.process_time() - started
    chars = sum(map(len, texts))
    return f"{chars:,} characters, {len(chunks):,} chunks, {links} links, the linking {took:.2f} s"


def concept_links(size: int = 2_000_000) -> str:
    """A 2 MB document whose every chunk (2,000 characters) names its 200 codes, linked on the
    embedded record store: 331,335 links. Its peak resident size is the process's (run it alone)."""
    import resource
    from datetime import UTC, datetime

    from cairn.adapters.local.sqlite_records import SqliteRecordStore
    from cairn.domain.models import Chunk
    from cairn.services.links.repository import LinkRepository
    from cairn.services.memory.entity_rules import RuleEntityExtractor
    from cairn.services.mnemosyne.concept_rules import ConceptRules
    from cairn.services.mnemosyne.concepts import ConceptGraph

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fakes.chunks import MemoryChunkIndex
    from tests.fakes.clock import FakeClock

    body = (" ".join(f"Q{i:03d}X" for i in range(200)) + ". ")[:2_000]
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    chunks = [
        Chunk(id=f"chk_{n:06d}", brain_id="brn", document_id="doc", path="a.md", ordinal=n, text=body,
              created_at=moment)
        for n in range(size // len(body))
    ]  # fmt: skip
    with tempfile.TemporaryDirectory() as data:
        records = SqliteRecordStore(Path(data) / "records.db")
        rules = ConceptRules(RuleEntityExtractor())
        graph = ConceptGraph(LinkRepository(records), rules, MemoryChunkIndex(8), FakeClock())
        walled = time.perf_counter()
        links = graph.index("brn", body, chunks, fresh=True)
        wall = time.perf_counter() - walled
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return (
        f"{len(body) * len(chunks):,} characters, {links:,} links, {wall:.2f} s wall, peak {peak} MB resident"
    )


def thought_keywords(size: int = 100_000) -> str:
    """The keywords of a ThoughtMCP memory of 100,000 characters (its most) of distinct words, made
    when it is remembered without keywords (and twice when its text is updated)."""
    import itertools
    import string

    from cairn.services.thoughtmcp.checks import auto_keywords

    letters = (string.ascii_lowercase[:20],) * 4
    text = " ".join("".join(w) for w in itertools.islice(itertools.product(*letters), size // 5))
    return f"{len(text):,} characters, keywords {', '.join(auto_keywords(text)[:3])}, ..."


def thought_hub(links: int = 2_000) -> str:
    """A ThoughtMCP memory every other memory of its user links to (2,000 of them, each updated
    after it was stored: re-linked among the newest, to it), forgotten on the embedded store. The
    hashing embedder of the tests stands in for the model (the links, not the vectors, cost)."""
    from cairn.bootstrap import build_container
    from cairn.bootstrap.local import local_adapters
    from cairn.config import Settings
    from cairn.services.thoughtmcp.brain import thought_brain
    from cairn.services.thoughtmcp.models import Metadata, NewMemory

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fakes.embedder import HashingEmbedder

    text, same = "The kettle descales on Fridays, always.", Metadata(("kettle",), ("t",), "c")
    heavier = Metadata(("kettle",), ("t",), "c", importance=1.0)
    with tempfile.TemporaryDirectory() as data:
        settings = Settings(data_dir=Path(data))
        adapters = local_adapters(settings)
        adapters.embedder = HashingEmbedder(adapters.embedder.dimension)
        container = build_container(settings, adapters)
        thoughts = container.thoughts
        brain = thought_brain(container.brains, None, create=True)
        others = [
            thoughts.remember(brain, NewMemory(f"Memory {n} of something else", "u", "s", "semantic"))
            for n in range(links)
        ]
        hub = thoughts.remember(brain, NewMemory(text, "u", "s", "semantic", heavier))
        for other in others:
            thoughts.update(brain, other["memoryId"], "u", content=f"{text} ", metadata=same)
        held = len(thoughts.links.outgoing(brain.id, hub["memoryId"]))
        started, walled = time.process_time(), time.perf_counter()
        thoughts.forget(brain, hub["memoryId"], "u")
        took, wall = time.process_time() - started, time.perf_counter() - walled
    return f"{held:,} links, the forget alone {took:.2f} s CPU, {wall:.2f} s wall"


def thought_highlight(memories: int = 2) -> str:
    """A ThoughtMCP full-text search for `x` finding memories of 100,000 characters (their most)
    of `x `, each hit highlighted as the search tool shows it (the hashing embedder of the tests
    stands in for the model)."""
    from cairn.bootstrap import build_container
    from cairn.bootstrap.local import local_adapters
    from cairn.config import Settings
    from cairn.domain.boolean_query import highlight, parse
    from cairn.services.thoughtmcp.brain import thought_brain
    from cairn.services.thoughtmcp.models import Filters, NewMemory

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fakes.embedder import HashingEmbedder

    with tempfile.TemporaryDirectory() as data:
        settings = Settings(data_dir=Path(data))
        adapters = local_adapters(settings)
        adapters.embedder = HashingEmbedder(adapters.embedder.dimension)
        container = build_container(settings, adapters)
        brain = thought_brain(container.brains, None, create=True)
        for _ in range(memories):
            container.thoughts.remember(brain, NewMemory("x " * 50_000, "u", "s", "semantic"))
        started = time.process_time()
        query = parse("x")
        hits, _ = container.thoughts.search(brain, "u", query, filters=Filters())
        shown = [highlight(query, hit.content) for hit, _rank in hits]
        took = time.process_time() - started
    return f"{len(shown)} hits of 100,000 characters, the search and highlights {took:.2f} s"


def gbrain_pages(size: int = 1_000_000) -> str:
    """gbrain pages of 1 MB (brain_put takes 1 MiB) read as brain_get and brain_check read them: a run
    of `\\r` before the last letter; a `Key: value` line of a run of spaces; a run of `A-`; and a page
    of 80,000 `Role: …` lines checked against a second page giving the role another value."""
    from datetime import datetime

    from cairn.domain.pages import parse_page
    from cairn.services.gbrain.assertions import AssertedPage, contradictions, extract

    said = []
    for name, text in (
        ("\\r run", "\r" * size + "x"),
        ("key-value spaces", "Role: x" + " " * size + "y"),
        ("A- run", "A-" * (size // 2)),
    ):
        started = time.process_time()
        found = extract(parse_page(text), "Alice")
        said.append(f"{name} {time.process_time() - started:.2f} s ({len(found)} claims)")
    at = datetime(2026, 1, 1)
    roles = parse_page("\n".join(f"Role: v{i}" for i in range(size // 12)))
    pages = [AssertedPage("a", "Alice", roles, at), AssertedPage("b", "Alice", parse_page("Role: v7"), at)]
    started = time.process_time()
    found = contradictions(pages)
    said.append(f"role lines {time.process_time() - started:.2f} s ({len(found):,} contradictions)")
    return ", ".join(said)


def gbrain_heading(size: int = 900_000) -> str:
    """brain_put of a gbrain page of one heading line of 900 KB (`## ## …`) on the embedded store
    (the hashing embedder of the tests stands in for the model), run alone for its peak."""
    import resource

    from cairn.bootstrap import build_container
    from cairn.bootstrap.local import local_adapters
    from cairn.config import Settings

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fakes.embedder import HashingEmbedder

    with tempfile.TemporaryDirectory() as data:
        settings = Settings(data_dir=Path(data))
        adapters = local_adapters(settings)
        adapters.embedder = HashingEmbedder(adapters.embedder.dimension)
        container = build_container(settings, adapters)
        container.brains.create("Default", slug="default")
        started = time.process_time()
        container.pages.put("notes/heading", "## " * (size // 3))
        took = time.process_time() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return f"{size:,} bytes, the put alone {took:.2f} s, peak {peak} MB resident"


def gbrain_merges(maps: int = 23_000) -> str:
    """A gbrain page whose 1 MB frontmatter is 23,000 maps each merged into the next
    (`m2: &m2 {<<: *m1, k2: 2}`), read as brain_get reads it (every read parses the page)."""
    import resource

    from cairn.domain.pages import parse_page

    chain = "".join(f"m{i}: &m{i} {{<<: *m{i - 1}, k{i}: {i}}}\n" for i in range(1, maps))
    text = f"---\nm0: &m0 {{a: 1}}\n{chain}---\nbody"
    page = parse_page(text)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return f"{len(text):,} bytes, {len(page.frontmatter)} frontmatter entries, peak {peak} MB resident"


class Built:
    """A case whose input is built only when it is run (one is 720 MB before compression), before
    its time starts."""

    def __init__(self, make: Callable[[], bytes], kind: str) -> None:
        self.make, self.kind = make, kind
        self.run: Callable[[], str] | None = None

    def prepare(self) -> None:
        self.run = extraction(self.make(), self.kind)

    def __call__(self) -> str:
        assert self.run is not None, "prepare() first"
        return self.run()


def pdf_cases() -> dict[str, Callable[[], str]]:
    """A 2 MB PDF whose page names 2,000 objects it does not hold; one whose table lists 1,000
    numbers at the offset of one 2 MB stream (every one read as a copy of it); and a page of text
    followed by 12 pages each drawn by 60 MB of lines (a Flate stream of 60 KB each)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.unit.ingest.pdfs import figures_pdf, unlisted_objects_pdf

    return {
        "pdf-missing": Built(lambda: unlisted_objects_pdf(missing=2_000, padding=2_000_000), "pdf"),
        "pdf-overlap": Built(lambda: unlisted_objects_pdf(0, misplaced=1_000, padding=2_000_000), "pdf"),
        "pdf-figures": Built(lambda: figures_pdf(12, 60_000_000), "pdf"),
    }


CASES: dict[str, Callable[[], str]] = {
    "json": extraction(deep_json(), "json"),
    "html": extraction(table_html(), "html"),
    "html-tags": extraction(unclosed_tags(), "html"),
    "md-images": images("<img src=x.png>" + unclosed_tags().decode(), "notes/a.md"),
    "page": extraction(ordinary_page(), "html"),
    "markdown": extraction(spaced_heading(), "markdown"),
    "pdf": extraction(shared_stream_pdf(), "pdf"),
    **pdf_cases(),
    "image-xmp": extraction(described_png(), "image"),
    "image-keywords": extraction(keyword_bomb_png(), "image"),
    "md-gallery": images("<img src=x.png>" * 50_000 + "\n\n*A caption*\n", "notes/a.md"),
    "speakers": many_speakers,
    "fact-abbreviations": fact_abbreviations,
    "query": long_query,
    "archive-links": archive_links,
    "graph-dead-links": graph_dead_links,
    "concept-honorifics": concept_honorifics,
    "concept-chunks": concept_chunks,
    "concept-links": concept_links,
    "thought-keywords": thought_keywords,
    "thought-hub": thought_hub,
    "thought-highlight": thought_highlight,
    "gbrain-pages": gbrain_pages,
    "gbrain-heading": gbrain_heading,
    "gbrain-merges": gbrain_merges,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    for name in parser.parse_args().case or list(CASES):
        case = CASES[name]
        if isinstance(case, Built):
            case.prepare()
        started = time.process_time()
        said = case()
        print(f"{name:<11} {time.process_time() - started:6.2f} s CPU  {said}", flush=True)


if __name__ == "__main__":
    main()
