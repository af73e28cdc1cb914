"""Relevance of each MCP surface's search tools on one small team-memory corpus (issue 28).

The fixture (bench/data/relevance/team_memory.json, invented text) is a small software company's team
memory: 80 items (facts with near-miss clusters such as three stores' retention settings and two
leads called Marta, decisions, incidents, people, customers, one user's preferences, how-tos, and
four facts that supersede earlier ones) and 87 queries, 67 labelled with the relevant item ids in
three styles (`lexical`: shares words with the item; `paraphrase`: other words; `multi`: 2-4
relevant items) and 20 `unrelated` ones the corpus never answers.

`cairn serve` runs on a fresh temp data dir and a free loopback port, with the default local
embedder. The whole corpus is seeded through each surface into a brain of its own with that
surface's own write tool (bench/relevance_surfaces.py has the adapters; Mnemosyne has no write tool
and is filled by `cairn ingest` before the server starts). Then, with the official MCP client, every
query goes to each surface's search tools with their default arguments (the brain, collection,
user or library named; ThoughtMCP's recall keeps its minSimilarity of 0.5), and every result is
mapped back to a fixture item by path, slug, id or title (content as the fallback; what cannot be
mapped is counted). Per tool:

- recall@10: the share of a query's relevant items among its first 10 distinct results, averaged
  over the labelled queries, overall and per style; MRR@10;
- AUC: the probability that a labelled query's top score beats an unrelated query's (ties, and two
  empty answers, count half; an empty answer loses to any score), on the tool's own score field;
- top-3 stability: 10 labelled queries' first three results before and after `--churn` other
  searches (random queries, labelled and unrelated, spread round-robin over the tools), the share
  unchanged;
- the results that could not be mapped, empty answers, distinct result lists, superseded items
  ranked above their successor, errors and p50 latency.

    python bench/relevance.py [--surfaces canonical,zengram,gbrain,thoughtmcp,mnemosyne]
                              [--churn 1000] [--json PATH] [--seed 28] [--fixture PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from relevance_surfaces import FIXTURE, SURFACES, Item, Query, Ranked, Surface, Tool, ToolFailed, load_fixture

K = 10
STABLE_TOP = 3
STABLE_QUERIES = 10
STYLES = ("lexical", "paraphrase", "multi")


# -- the server ------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serving(cairn: Path, data_dir: Path, env: dict[str, str], log: Path) -> Iterator[str]:
    """`cairn serve` on the data dir (loopback, no token) until the block ends; its base URL."""
    port = free_port()
    command = [str(cairn), "serve", "--port", str(port), "--data-dir", str(data_dir)]
    with log.open("w") as out:
        server = subprocess.Popen(
            [*command, "--log-level", "warning"], env={**os.environ, **env}, stdout=out, stderr=out
        )
        try:
            for _ in range(600):
                if server.poll() is not None:
                    raise SystemExit(f"cairn serve exited: {log.read_text()[-2000:]}")
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=0.5).read()
                    break
                except OSError:
                    time.sleep(0.05)
            else:
                raise SystemExit("cairn serve did not answer /healthz in 30 s")
            yield f"http://127.0.0.1:{port}"
        finally:
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


# -- running the searches --------------------------------------------------------------------------


@dataclass
class Run:
    surface: Surface
    tool: Tool
    results: dict[str, Ranked] = field(default_factory=dict)
    before: dict[str, Ranked] = field(default_factory=dict)
    after: dict[str, Ranked] = field(default_factory=dict)
    churn_errors: int = 0


async def search(run: Run, client: Any, query: Query) -> Ranked:
    started = time.perf_counter()
    try:
        found = await run.surface.search(client, run.tool, query.text)
    except ToolFailed as e:
        found = Ranked(error=str(e)[:300])
    found.ms = (time.perf_counter() - started) * 1000
    return found


async def listed_tools(client: Any) -> set[str]:
    listed = await client.list_tools()
    return {t.name for t in listed.tools}


async def measure(
    base: str, surfaces: Sequence[Surface], queries: Sequence[Query], args: argparse.Namespace
) -> tuple[list[Run], dict[str, Any]]:
    from mcp import Client

    rng = random.Random(args.seed)
    timings: dict[str, Any] = {"seed_s": {}}
    runs: list[Run] = []
    async with AsyncExitStack() as stack:
        admin = await stack.enter_async_context(Client(base + "/mcp", read_timeout_seconds=120))
        clients: dict[str, Any] = {}
        for s in surfaces:
            clients[s.name] = await stack.enter_async_context(s.client(base))
            names = await listed_tools(clients[s.name])
            wanted = [t.label.split()[1] for t in s.tools if not t.diagnostic]
            missing = [name for name in wanted if name not in names]
            if missing:
                raise SystemExit(f"{s.name}: tools/list has no {missing} (it lists {sorted(names)})")
            started = time.perf_counter()
            await s.prepare(clients[s.name], admin)
            await s.seed(clients[s.name])
            timings["seed_s"][s.name] = round(time.perf_counter() - started, 2)
            print(f"seeded {s.name}: {len(s.items)} items in {timings['seed_s'][s.name]:.1f} s", flush=True)
            runs.extend(Run(s, tool) for tool in s.tools)

        # One shuffled order for every tool (ranking may depend on earlier searches: zengram counts
        # each result as an access); diagnostics first, so theirs sees no earlier searches.
        order = list(queries)
        rng.shuffle(order)
        timings["eval_order"] = [q.id for q in order]
        started = time.perf_counter()
        for run in sorted(runs, key=lambda r: not r.tool.diagnostic):
            for query in order:
                run.results[query.id] = await search(run, clients[run.surface.name], query)
        timings["eval_s"] = round(time.perf_counter() - started, 2)
        print(
            f"evaluated {len(queries)} queries x {len(runs)} tools in {timings['eval_s']:.1f} s", flush=True
        )

        labelled = [q for q in queries if q.labelled]
        stable = sorted(rng.sample(labelled, min(STABLE_QUERIES, len(labelled))), key=lambda q: q.id)
        started = time.perf_counter()
        for run in runs:
            for query in stable:
                run.before[query.id] = await search(run, clients[run.surface.name], query)
        churners = [run for run in runs if not run.tool.diagnostic]
        for n in range(args.churn):
            run = churners[n % len(churners)]
            found = await search(run, clients[run.surface.name], rng.choice(queries))
            run.churn_errors += found.error is not None
        for run in runs:
            for query in stable:
                run.after[query.id] = await search(run, clients[run.surface.name], query)
        timings["churn_s"] = round(time.perf_counter() - started, 2)
        print(f"churn: {args.churn} searches, stability re-checked in {timings['churn_s']:.1f} s", flush=True)
        timings["stable_queries"] = [q.id for q in stable]
    return runs, timings


# -- metrics ---------------------------------------------------------------------------------------


def distinct(found: Ranked, k: int) -> list[tuple[str, str | None]]:
    """The first k distinct results as (handle, item id): an item counts once however many of its
    chunks came back; an unmapped result is its own handle."""
    out: list[tuple[str, str | None]] = []
    seen: set[str] = set()
    for key, item_id in zip(found.keys, found.ids, strict=True):
        handle = item_id or f"?{key}"
        if handle not in seen:
            seen.add(handle)
            out.append((handle, item_id))
        if len(out) == k:
            break
    return out


def auc(positives: Sequence[float | None], negatives: Sequence[float | None]) -> float | None:
    def beats(a: float | None, b: float | None) -> float:
        if a is None or math.isnan(a):
            return 0.5 if b is None or math.isnan(b) else 0.0
        if b is None or math.isnan(b):
            return 1.0
        return 1.0 if a > b else 0.5 if a == b else 0.0

    if not positives or not negatives:
        return None
    return sum(beats(p, n) for p in positives for n in negatives) / (len(positives) * len(negatives))


def metrics(
    run: Run, queries: Sequence[Query], items: Sequence[Item], order: Sequence[str]
) -> dict[str, Any]:
    """`order`: the query ids in the order they were asked (for the drift)."""
    labelled = [q for q in queries if q.labelled]
    unrelated = [q for q in queries if not q.labelled]
    recalls: dict[str, list[float]] = {style: [] for style in STYLES}
    rr: list[float] = []
    recall_of: dict[str, float] = {}
    for q in labelled:
        top = [item_id for _, item_id in distinct(run.results[q.id], K)]
        recall_of[q.id] = len(set(q.relevant) & set(top)) / len(q.relevant)
        recalls.setdefault(q.style, []).append(recall_of[q.id])
        rr.append(next((1 / (n + 1) for n, item_id in enumerate(top) if item_id in q.relevant), 0.0))
    every = [r for values in recalls.values() for r in values]
    asked = [recall_of[qid] for qid in order if qid in recall_of]
    half = len(asked) // 2
    results = [run.results[q.id] for q in queries]
    returned = sum(len(r.keys) for r in results)
    unmapped = sum(item_id is None for r in results for item_id in r.ids)
    lists = Counter(tuple(h for h, _ in distinct(r, K)) for r in results if r.keys)
    changed = [
        qid
        for qid, before in run.before.items()
        if [h for h, _ in distinct(before, STABLE_TOP)]
        != [h for h, _ in distinct(run.after[qid], STABLE_TOP)]
    ]
    superseded: dict[str, str] = {i.supersedes: i.id for i in items if i.supersedes}
    stale = stale_total = 0
    for q in labelled:
        for newer in q.relevant:
            older = next((old for old, new in superseded.items() if new == newer), None)
            if older is None:
                continue
            stale_total += 1
            ranked = [item_id for _, item_id in distinct(run.results[q.id], K)]
            if older in ranked and (newer not in ranked or ranked.index(older) < ranked.index(newer)):
                stale += 1
    errors = [r.error for r in results if r.error]
    ms = [r.ms for r in results]
    return {
        "surface": run.surface.name,
        "tool": run.tool.label,
        "score_field": run.tool.score_field,
        "recall@10": statistics.mean(every),
        "mrr@10": statistics.mean(rr),
        "recall@10_by_style": {style: statistics.mean(v) if v else None for style, v in recalls.items()},
        "recall@10_first_half": statistics.mean(asked[:half]),
        "recall@10_second_half": statistics.mean(asked[half:]),
        "auc": auc(
            [run.results[q.id].top_score for q in labelled], [run.results[q.id].top_score for q in unrelated]
        ),
        "top3_stable": (len(run.before) - len(changed)) / len(run.before) if run.before else None,
        "top3_changed": changed,
        "results_returned": returned,
        "results_unmapped": unmapped,
        "empty_labelled": sum(not run.results[q.id].keys for q in labelled),
        "empty_unrelated": sum(not run.results[q.id].keys for q in unrelated),
        "distinct_result_lists": len(lists),
        "most_shared_list": lists.most_common(1)[0][1] if lists else 0,
        "superseded_first": [stale, stale_total],
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "churn_errors": run.churn_errors,
        "p50_ms": statistics.median(ms) if ms else None,
    }


def fmt(value: float | None, width: int = 5) -> str:
    return f"{value:{width}.3f}" if value is not None else f"{'-':>{width}}"


def table(rows: Sequence[dict[str, Any]], churn: int) -> str:
    head = (
        f"{'surface tool':<24} {'R@10':>5} {'MRR':>5} {'lex':>5} {'para':>5} {'multi':>5} {'drift':>6} "
        f"{'AUC':>5} {'top3':>5} {'unmapped':>9} {'empty L/U':>9} {'lists':>5} {'stale':>5} {'err':>3} "
        f"{'p50ms':>5}"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        style = r["recall@10_by_style"]
        drift = r["recall@10_second_half"] - r["recall@10_first_half"]
        lines.append(
            f"{r['tool']:<24} {fmt(r['recall@10'])} {fmt(r['mrr@10'])} {fmt(style['lexical'])} "
            f"{fmt(style['paraphrase'])} {fmt(style['multi'])} {drift:+6.3f} {fmt(r['auc'])} "
            f"{fmt(r['top3_stable'])} {r['results_unmapped']:>4}/{r['results_returned']:<4} "
            f"{r['empty_labelled']:>4}/{r['empty_unrelated']:<4} {r['distinct_result_lists']:>5} "
            f"{r['superseded_first'][0]:>2}/{r['superseded_first'][1]:<2} {r['errors']:>3} {r['p50_ms']:5.1f}"
        )
    lines += [
        "R@10, MRR: over the labelled queries; lex/para/multi: R@10 per style; drift: R@10 of the",
        "second half of the labelled queries (in the order asked) minus the first; AUC: labelled vs",
        f"unrelated top score; top3: share of {STABLE_QUERIES} queries whose top 3 is unchanged after",
        f"{churn} other searches; unmapped: results not mapped to an item / all results; empty L/U: empty",
        "answers to labelled / unrelated queries; lists: distinct top-10 lists over all queries; stale: a",
        "superseded item above its successor / labelled queries about a successor. `zengram API",
        "read_only` is a diagnostic, not an MCP tool: brain_search's HTTP API without counting accesses,",
        "asked before brain_search.",
    ]
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--surfaces", default=",".join(SURFACES), help="comma-separated (default: all five)")
    parser.add_argument("--churn", type=int, default=1000, help="searches between the stability checks")
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument("--fixture", type=Path, default=FIXTURE)
    parser.add_argument("--seed", type=int, default=28)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.surfaces.split(",") if n.strip()]
    unknown = [n for n in names if n not in SURFACES]
    if unknown or not names:
        parser.error(f"--surfaces: unknown {unknown}; choose among {', '.join(SURFACES)}")
    items, queries = load_fixture(args.fixture)
    surfaces = [SURFACES[n](items) for n in names]
    cairn = Path(sys.executable).with_name("cairn")
    env: dict[str, str] = {}
    for s in surfaces:
        env.update(s.env)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cairn-relevance-") as tmp:
        data_dir, work = Path(tmp) / "data", Path(tmp) / "work"
        data_dir.mkdir()
        work.mkdir()
        for s in surfaces:
            s.offline_setup(cairn, data_dir, work)
        setup_s = time.perf_counter() - started
        with serving(cairn, data_dir, env, Path(tmp) / "serve.log") as base:
            print(f"cairn serve at {base}, data in {data_dir}", flush=True)
            runs, timings = asyncio.run(measure(base, surfaces, queries, args))
    timings["offline_setup_s"] = round(setup_s, 2)
    timings["total_s"] = round(time.perf_counter() - started, 2)
    rows = [metrics(run, queries, items, timings["eval_order"]) for run in runs]
    print()
    print(table(rows, args.churn))
    for r in rows:
        if r["first_error"]:
            print(f"{r['tool']}: {r['errors']} errors, first: {r['first_error']}")
    print("\nscore fields: " + "; ".join(f"{r['tool']}: {r['score_field']}" for r in rows))
    for r in rows:
        if r["most_shared_list"] > 2:
            print(f"{r['tool']}: one top-10 list answered {r['most_shared_list']} of {len(queries)} queries")
    shown = {k: v for k, v in timings.items() if k not in ("eval_order", "stable_queries")}
    print(f"runtime {timings['total_s']:.0f} s: {json.dumps(shown)}")
    if args.json:
        detail = {
            r["tool"]: {
                q.id: {
                    "ids": run.results[q.id].ids,
                    "scores": run.results[q.id].scores,
                    "error": run.results[q.id].error,
                }
                for q in queries
            }
            for r, run in zip(rows, runs, strict=True)
        }
        out = {
            "fixture": str(args.fixture),
            "items": len(items),
            "queries": Counter(q.style for q in queries),
            "churn": args.churn,
            "seed": args.seed,
            "timings": timings,
            "tools": rows,
            "rankings": detail,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1, default=str) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
