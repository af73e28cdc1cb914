"""Print the CPU time Cairn spends on small inputs built to be expensive, in process.

Each was once far slower than its size (docs/PERFORMANCE.md, "Hostile inputs"): a file any key
that may write can ingest, or a query any key that may read can send.

    .venv/bin/python bench/hostile_inputs.py [--case json ...] [--versions N] [--facts N] [--rows N]
        [--ann-dir DIR] [--keep DIR] [--copies K]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from functools import partial
from pathlib import Path

from counts_over import counts_over, sweep_report
from hostile_services import (
    concept_chunks,
    concept_honorifics,
    concept_links,
    distinct_facts,
    gbrain_heading,
    gbrain_merges,
    gbrain_pages,
    graph_dead_links,
    mnemosyne_graph_libraries,
    settling_looks,
    thought_deep_check,
    thought_highlight,
    thought_hub,
    thought_keywords,
    version_chain,
)
from hostile_sql import (
    brain_count,
    chunk_id_writes,
    compaction_neighbour,
    job_backlog,
    many_brains,
    owner_filter_neighbour,
    staged_activation,
)
from hostile_vectors import ann_file_check, vector_compaction, vector_file_check
from memory_writes import (
    doc_erase,
    doc_ingest,
    doc_rewrite,
    reach_pass,
    thought_erase,
    thought_forget,
    thought_remember,
    typed_store,
    typed_store_plain,
)
from superseded_lookups import memory_counts, superseded_facts, zengram_stats


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


def markers_stream(size: int = 200_000, delta: int = 3) -> str:
    """A model's answer of 200 KB streamed in 3-character deltas through the `[n]` citation tracker
    of the model-backed generators (extractive_markers.py), each stream timed alone: prose whose
    markers split across deltas; one sentence without markers or an end; a full stop followed by
    an unclosed `[` of numbers, by a run of spaces, by a run of markers; a run of full stops."""
    from cairn.adapters.local.extractive_markers import MarkerCitations
    from cairn.ports.generator import Passage

    passages = [Passage(f"c{n}", f"d{n}", f"Passage {n} about the kettle.") for n in range(1, 4)]
    prose = "The kettle descales on Fridays [1]. It costs 3.5 euros.[2][3] Ask [passage 2, 3]!\n"
    streams = {
        "prose": prose * (size // len(prose)),
        "one sentence": "word " * (size // 5),
        "unclosed [": "It cost 3. [" + "1, " * (size // 3),
        "spaces": "Done." + " " * size,
        "markers": "Done." + "[1]" * (size // 3),
        "full stops": "Done" + "." * size,
    }
    said = []
    for name, text in streams.items():
        tracker = MarkerCitations(passages)
        started = time.process_time()
        cited = sum(len(tracker.feed(text[i : i + delta])) for i in range(0, len(text), delta))
        cited += len(tracker.finish())
        said.append(f"{name} {time.process_time() - started:.2f} s ({cited:,} citations)")
    return ", ".join(said)


def archive_bomb(size: int = 1 << 30) -> str:
    """`cairn import` of a 1 MB gzip archive whose second line inflates to `size` bytes (1 GiB)
    without a newline: the peak memory of the command, run on its own, and what it said."""
    import gzip
    import json
    import os
    import subprocess

    header = {"kind": "cairn-archive", "format": 2, "brain": {"slug": "bomb", "name": "Bomb"}}
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "bomb.jsonl.gz"
        with gzip.open(archive, "wb", compresslevel=1) as f:
            f.write(json.dumps({**header, "exported_at": "2026-01-01T00:00:00Z"}).encode() + b"\n")
            for _ in range(size >> 20):
                f.write(b"\0" * (1 << 20))
        measure = (
            "import resource, sys\nfrom cairn.entrypoints.cli import main\ncode = main(sys.argv[1:])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, code)"
        )
        argv = [sys.executable, "-c", measure, "import", str(archive), "--data-dir", str(Path(tmp) / "data")]
        done = subprocess.run(
            argv, capture_output=True, text=True, env=os.environ | {"PYTHONPATH": ":".join(sys.path)}
        )
        peak, code = [*done.stdout.split(), "?", "?"][:2]
        said = (done.stderr.strip().splitlines() or [""])[-1][:90]
        return f"peak {peak} MB, exit {code}, said: {said}"


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
    "archive-bomb": archive_bomb,
    "markers-stream": markers_stream,
    "graph-dead-links": graph_dead_links,
    "concept-honorifics": concept_honorifics,
    "concept-chunks": concept_chunks,
    "concept-links": concept_links,
    "mnemosyne-graph-libraries": mnemosyne_graph_libraries,
    "thought-keywords": thought_keywords,
    "thought-hub": thought_hub,
    "thought-highlight": thought_highlight,
    "thought-deep-check": thought_deep_check,
    "gbrain-pages": gbrain_pages,
    "gbrain-heading": gbrain_heading,
    "gbrain-merges": gbrain_merges,
    "version-chain": version_chain,
    "settling-looks": settling_looks,
    "distinct-facts": distinct_facts,
    "superseded-facts": superseded_facts,
    "memory-counts": memory_counts,
    "zengram-stats": zengram_stats,
    "counts-over": counts_over,
    "sweep-report": sweep_report,
    "vector-file-check": vector_file_check,
    "vector-compaction": vector_compaction,
    "ann-file-check": ann_file_check,
    "chunk-id-writes": chunk_id_writes,
    "owner-filter-neighbour": owner_filter_neighbour,
    "many-brains": many_brains,
    "job-backlog": job_backlog,
    "compaction-neighbour": compaction_neighbour,
    "staged-activation": staged_activation,
    "brain-count": brain_count,
    "thought-remember": thought_remember,
    "thought-forget": thought_forget,
    "thought-erase": thought_erase,
    "doc-ingest": doc_ingest,
    "doc-rewrite": doc_rewrite,
    "doc-erase": doc_erase,
    "reach-pass": reach_pass,
    "typed-store": typed_store,
    "typed-store-plain": typed_store_plain,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    parser.add_argument("--versions", type=int, help="version-chain: the values written (10,000)")
    parser.add_argument(
        "--facts",
        type=int,
        help="distinct-facts, superseded-facts, memory-counts, zengram-stats, counts-over: the facts "
        "written (10,000; 1,000; counts-over 2,000)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        help="superseded-facts, memory-counts, zengram-stats: build its store there once, then reuse it",
    )
    parser.add_argument(
        "--copies",
        type=int,
        default=0,
        help="superseded-facts, memory-counts, zengram-stats, counts-over: its facts copied K times over",
    )
    parser.add_argument(
        "--rows",
        type=int,
        help="vector-file-check, vector-compaction, ann-file-check, chunk-id-writes, "
        "owner-filter-neighbour: the rows (100,000)",
    )
    parser.add_argument(
        "--ann-dir", type=Path, help="ann-file-check: build its index there once, then reuse it"
    )
    parser.add_argument("--documents", type=int, help="reach-pass: the brain's documents (10,000)")
    args = parser.parse_args()
    if args.documents:
        CASES["reach-pass"] = partial(reach_pass, args.documents)
    if args.rows or args.ann_dir:
        CASES["ann-file-check"] = partial(ann_file_check, args.rows or 100_000, keep=args.ann_dir)
    if args.rows:
        CASES["vector-file-check"] = partial(vector_file_check, args.rows)
        CASES["vector-compaction"] = partial(vector_compaction, args.rows)
        CASES["chunk-id-writes"] = partial(chunk_id_writes, args.rows)
        CASES["owner-filter-neighbour"] = partial(owner_filter_neighbour, args.rows)
    if args.versions:
        CASES["version-chain"] = partial(version_chain, args.versions)
    if args.facts:
        CASES["distinct-facts"] = partial(distinct_facts, args.facts)
    if args.facts or args.keep:
        CASES["superseded-facts"] = partial(
            superseded_facts, args.facts or 1_000, keep=args.keep, copies=args.copies
        )
        CASES["memory-counts"] = partial(
            memory_counts, args.facts or 1_000, keep=args.keep, copies=args.copies
        )
        CASES["zengram-stats"] = partial(
            zengram_stats, args.facts or 1_000, keep=args.keep, copies=args.copies
        )
    if args.facts or args.copies:
        CASES["counts-over"] = partial(counts_over, args.facts or 2_000, copies=args.copies)
    for name in args.case or list(CASES):
        case = CASES[name]
        if isinstance(case, Built):
            case.prepare()
        started = time.process_time()
        said = case()
        print(f"{name:<11} {time.process_time() - started:6.2f} s CPU  {said}", flush=True)


if __name__ == "__main__":
    main()
