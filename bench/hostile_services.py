"""The service-level cases of bench/hostile_inputs.py: graph walks, Mnemosyne concepts, ThoughtMCP
memories and gbrain pages, each built on a fresh embedded store (or in process) and timed alone.
Run them through `bench/hostile_inputs.py --case NAME`."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING
from unittest import mock

if TYPE_CHECKING:
    from cairn.bootstrap import Container
    from cairn.domain.models import Brain


def _hashing_store(data: Path, *, symbols: bool = False) -> Container:
    """A container on the embedded store at `data`, the tests' hashing embedder standing in for the
    model (the cases time what the store and services do, not embedding); `symbols`: its later
    release, which reads symbols and gives their texts a vector version."""
    from cairn.bootstrap import build_container
    from cairn.bootstrap.local import local_adapters
    from cairn.config import Settings

    _with_test_fakes()
    from tests.fakes.embedder import HashingEmbedder, SymbolHashingEmbedder

    settings = Settings(data_dir=data)
    adapters = local_adapters(settings)
    adapters.embedder = (SymbolHashingEmbedder if symbols else HashingEmbedder)(adapters.embedder.dimension)
    return build_container(settings, adapters)


def _with_test_fakes() -> None:
    """Make the repository's tests/fakes importable (the hashing embedder, the fake stores)."""
    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.insert(0, root)


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

    from cairn.domain.models import Chunk
    from cairn.services.links.repository import LinkRepository
    from cairn.services.memory.entity_rules import RuleEntityExtractor
    from cairn.services.mnemosyne.concept_rules import ConceptRules
    from cairn.services.mnemosyne.concepts import ConceptGraph

    _with_test_fakes()
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

    from cairn.adapters.local.sqlite_records import SqliteRecordStore
    from cairn.domain.models import Chunk
    from cairn.services.links.repository import LinkRepository
    from cairn.services.memory.entity_rules import RuleEntityExtractor
    from cairn.services.mnemosyne.concept_rules import ConceptRules
    from cairn.services.mnemosyne.concepts import ConceptGraph

    _with_test_fakes()
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
    from cairn.services.thoughtmcp.brain import thought_brain
    from cairn.services.thoughtmcp.models import Metadata, NewMemory

    text, same = "The kettle descales on Fridays, always.", Metadata(("kettle",), ("t",), "c")
    heavier = Metadata(("kettle",), ("t",), "c", importance=1.0)
    with tempfile.TemporaryDirectory() as data:
        container = _hashing_store(Path(data))
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


def thought_deep_check(memories: int = 5_000, users: int = 10) -> str:
    """`cairn check --deep` of a ThoughtMCP brain of 5,000 memories of 10 users, one in ten with an
    emoji, stored by a release that read symbols as nothing and checked by one that reads them: the
    comparison alone (a dry run), then the repair (their chunks and sector vectors embedded again),
    each timed, with the process's peak resident memory."""
    import resource

    from cairn.services.thoughtmcp.brain import thought_brain
    from cairn.services.thoughtmcp.models import NewMemory

    with tempfile.TemporaryDirectory() as data:
        old = _hashing_store(Path(data))
        brain = thought_brain(old.brains, None, create=True)
        for n in range(memories):
            text = f"Memory {n} of the harbour and its ferries" + (" 🦊" if n % 10 == 0 else "")
            old.thoughts.remember(brain, NewMemory(text, f"user{n % users}", "s", "semantic"))
        container = _hashing_store(Path(data), symbols=True)
        said = []
        for repair in (False, True):
            started, walled = time.process_time(), time.perf_counter()
            found = container.repair.check(brain, deep=True, repair=repair)
            took, wall = time.process_time() - started, time.perf_counter() - walled
            stale = len(getattr(found, "stale_vectors", ()))
            said.append(
                f"{'repair' if repair else 'compare'} {took:.2f} s CPU {wall:.2f} s wall "
                f"({len(found.stale)} chunked, {stale} sector records stale)"
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    return f"{memories:,} memories: " + "; ".join(said) + f"; peak {peak} MB resident"


def thought_highlight(memories: int = 2) -> str:
    """A ThoughtMCP full-text search for `x` finding memories of 100,000 characters (their most)
    of `x `, each hit highlighted as the search tool shows it (the hashing embedder of the tests
    stands in for the model)."""
    from cairn.domain.boolean_query import highlight, parse
    from cairn.services.thoughtmcp.brain import thought_brain
    from cairn.services.thoughtmcp.models import Filters, NewMemory

    with tempfile.TemporaryDirectory() as data:
        container = _hashing_store(Path(data))
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

    with tempfile.TemporaryDirectory() as data:
        container = _hashing_store(Path(data))
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


def mnemosyne_graph_libraries(libraries: int = 10, codes: int = 64, chunks: int = 1_000) -> str:
    """A Mnemosyne search naming 64 codes (concepts.MAX_QUERY_CONCEPTS) over ten libraries on the
    embedded store, each of 1,000 chunks (ten items of 100 sections) each naming 40 of the codes at
    random: every code is on ~620 chunks of every library, so each of the query's concepts reads a
    full partition (concepts.MAX_DF links) per library. Timed: one search over all the libraries,
    and one over the first alone (the hashing embedder of the tests stands in for the model)."""
    import random

    from cairn.services.mnemosyne.library_search import SearchRequest

    rng = random.Random(7)
    names = [f"Q{i:03d}X" for i in range(codes)]
    with tempfile.TemporaryDirectory() as data:
        container = _hashing_store(Path(data))
        shelf = []
        for n in range(libraries):
            brain = container.brains.create(f"Library {n}", slug=f"library-{n}")
            shelf.append(container.libraries.describe(brain.id, library_type="business"))
            for item in range(10):
                sections = (
                    f"## Part {s}\n\nThe register lists {' '.join(rng.sample(names, 40))} today."
                    for s in range(chunks // 10)
                )
                text = f"# Item {item}\n\n" + "\n\n".join(sections)
                container.ingest.ingest_bytes(brain, text.encode(), name=f"i{item}.md", queue=False)
        held = sum(container.search.chunks.count(lib.uid) for lib in shelf)
        query = "Which entries list " + " ".join(names) + "?"
        said = [f"{libraries} libraries of {held // libraries:,} chunks"]
        for scope in (shelf, shelf[:1]):
            started = time.process_time()
            found = container.library_search.search(SearchRequest(query, scope, rerank=False))
            took = time.process_time() - started
            said.append(f"{len(scope)} searched {took:.2f} s ({len(found.candidates)} candidates)")
    return ", ".join(said)


def version_chain(versions: int = 10_000) -> str:
    """One fact key written `versions` times on the embedded store, each value superseding the one
    before (zengram's brain_store with a key; the hashing embedder of the tests stands in for the
    model), timed as the chain grows: the mean write of the 100 before the 1,000th and of the last
    100, then, at the end, the current value read through the key's claim and through brain_query
    (`type=fact&key=`), the item listing's first and last page of the key's values (the web UI's),
    the current value's detail (its chain), a search of current values and of all, each timed twice
    (the process's first search of the brain also checks its vector file once), and the counts
    (`_counted`); and the rows of the brain's vector file beside its chunks."""
    from functools import partial

    from cairn.domain.models import MemoryType
    from cairn.services.explorer.detail import ItemDetails
    from cairn.services.explorer.items import ItemFilter, ItemListing
    from cairn.services.memory.memory_model import MemoryInput, MemoryQuery

    def timed(run: Callable[[], object]) -> tuple[float, object]:
        started = time.perf_counter()
        out = run()
        return (time.perf_counter() - started) * 1000, out

    said: list[str] = []
    with tempfile.TemporaryDirectory() as data:
        c = _hashing_store(Path(data))
        brain = c.brains.create("Default", slug="default")
        writes: list[float] = []
        for n in range(versions):
            value = MemoryInput(MemoryType.fact, f"The kettle descales every {n} days.", key="kettle.descale")
            writes.append(timed(partial(c.memories.store, brain, value))[0])
        for upto in sorted({min(1_000, versions), versions}):
            said.append(f"writes {upto - 100:,}-{upto:,} {sum(writes[upto - 100 : upto]) / 100:.1f} ms each")
        size = sum(path.stat().st_size for path in Path(data, "vectors").glob("*.f32"))
        rows = size // (4 * c.adapters.embedder.dimension)
        chunks = c.adapters.chunks.count(brain.id)
        said.append(f"vector file {rows:,} rows ({size / 1e6:.1f} MB) for {chunks:,} chunks")
        line = c.memories.claims.line(brain.id, MemoryType.fact, "kettle.descale", None)
        took, current = timed(lambda: c.memories.get(brain, line.doc_id))
        said.append(f"current by its claim {took:.1f} ms")
        took, _ = timed(lambda: c.zengram.query({"type": "fact", "key": "kettle.descale"}))
        said.append(f"brain_query {took:.1f} ms")
        listing, every = ItemListing(c.documents.repo), ItemFilter(validity="any", prefix="memories/fact/")
        took, page = timed(lambda: listing.page(brain, every))
        pages, cursor = 1, page.cursor
        while cursor:
            last, page = page, listing.page(brain, every, cursor=cursor)
            pages, cursor = pages + 1, page.cursor
        took_last, _ = timed(lambda: listing.page(brain, every, cursor=last.cursor))
        said.append(f"listing first page {took:.1f} ms, last (page {pages:,}) {took_last:.1f} ms")
        details = ItemDetails(c.documents.repo, c.documents, c.search.chunks, c.entities.links, None)
        took, _ = timed(lambda: details.detail(brain, current.id))
        said.append(f"detail {took:.1f} ms")
        for everything in (False, True):
            asked = MemoryQuery(include_superseded=everything, count_access=False)
            took, hits = timed(partial(c.memories.search, brain, "how often does the kettle descale", asked))
            again, _ = timed(partial(c.memories.search, brain, "how often does the kettle descale", asked))
            said.append(
                f"search{' with superseded' if everything else ''} {took:.1f} ms, again {again:.1f} ms "
                f"({len(hits)} hits)"
            )
        said += _counted(c, brain)
    return f"{versions:,} versions: " + ", ".join(said)


def _counted(c: Container, brain: Brain) -> list[str]:
    """A briefing (compact, whose first call counts every memory record), the count it shows read
    again uncached, and zengram's stats."""
    took: list[float] = []
    for run in (
        lambda: c.zengram.briefing({"since": "2000-01-01T00:00:00Z"}),
        lambda: c.memories.count(brain, max_age_s=0),
        c.zengram.stats,
    ):
        started = time.perf_counter()
        run()
        took.append((time.perf_counter() - started) * 1000)
    return [f"briefing {took[0]:.1f} ms, count {took[1]:.1f} ms, stats {took[2]:.1f} ms"]


def distinct_facts(facts: int = 10_000) -> str:
    """`facts` facts of as many keys on the embedded store (the hashing embedder of the tests
    stands in for the model), then brain_query by one key (one row), all facts (the newest 50), and
    zengram's export of the active facts (the first 1,000), and the counts (`_counted`)."""
    from cairn.domain.models import MemoryType
    from cairn.services.memory.memory_model import MemoryInput

    said: list[str] = []
    with tempfile.TemporaryDirectory() as data:
        c = _hashing_store(Path(data))
        brain = c.brains.create("Default", slug="default")
        for n in range(facts):
            c.memories.store(
                brain, MemoryInput(MemoryType.fact, f"Pump {n} runs at {n % 97} bar.", key=f"pump.{n}")
            )
        for name, run in (
            ("brain_query by key", lambda: c.zengram.query({"type": "fact", "key": f"pump.{facts // 2}"})),
            ("brain_query all", lambda: c.zengram.query({"type": "fact"})),
            ("export active", lambda: c.zengram.export({"type": "fact"})),
        ):
            started = time.perf_counter()
            run()
            said.append(f"{name} {(time.perf_counter() - started) * 1000:.1f} ms")
        said += _counted(c, brain)
    return f"{facts:,} facts: " + ", ".join(said)


def settling_looks(brains: int = 1_000, deletions: int = 100) -> str:
    """One sweep's looks at `deletions` brain deletions settling at once beside the rest of
    `brains` brains (one in ten holding a note) on the embedded store: the time of
    `ErasureService.settle` and the record store's scans it made (on DynamoDB each reads the whole
    table)."""
    with tempfile.TemporaryDirectory() as data:
        c = _hashing_store(Path(data))
        made = [c.brains.create(f"Brain {n}", slug=f"brain-{n}") for n in range(brains)]
        for n, brain in enumerate(made):
            if n % 10 == 0:
                c.documents.write(brain, "notes/ledger.md", f"Ledger {n} is in the blue cabinet.".encode())
        for brain in made[:deletions]:
            c.erasure.delete_brain(brain.id)
        records = c.erasure.keyspace.records
        with mock.patch.object(records, "scan", wraps=records.scan) as scans:
            started = time.perf_counter()
            c.erasure.settle()
            took = (time.perf_counter() - started) * 1000
    said = f"settle {took:.0f} ms, {scans.call_count} scans"
    return f"{deletions} deletions settling beside {brains:,} brains: {said}"
