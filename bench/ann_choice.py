"""Which approximate-nearest-neighbour library for the embedded vector leg: usearch, faiss or hnswlib.

Random unit vectors (384 dims, float32, seeded, written in 50,000-row chunks to a raw float32 file
of the same layout as a brain's vector file, so the exact baseline is cairn's own VectorFile).
Two query sets of 300: noisy copies of stored vectors (cosine 0.6-0.9 to their source) and random
unit vectors. Ground truth is exact top-k (numpy argpartition over the matrix, chunked).

Each library and storage type runs in fresh subprocesses (RSS is per process):

- build: incrementally from the file, with 1 and/or 2 threads; size on disk; RSS after build
- open: cold (the index file dropped from the page cache with posix_fadvise) in the serving mode
  (usearch `view=True`, faiss `IO_FLAG_MMAP_IFC`; hnswlib has no mmap and reads the whole file)
  and fully loaded; RSS after open and after the first query
- query: top-10 p50/p95 and recall@10 for rising ef until recall >= 0.98; the top-100 candidate
  pool the vector leg asks for; for the i8/f16 storages also top-40 re-scored exactly from the
  float32 file; allowed sets of 50/10/1/0.1 % of rows (faiss IDSelectorBitmap, hnswlib filter
  callback, usearch post-filter with oversampling: its Python search has no predicate) next to the
  exact search over the allowed rows; RSS after 300 searches
- mutate: the loaded index takes 1,000 single-row adds, then 1,000 deletes (usearch remove,
  hnswlib mark_deleted, faiss cannot remove from HNSW: an IDSelector excludes them); searches
  after must never return a deleted id and must find the added rows
- concurrent: one thread adds 1,000 rows one at a time while another searches (a crash shows as
  a signal)

    .venv/bin/python bench/ann_choice.py --rows 100000 --single-thread-build
    .venv/bin/python bench/ann_choice.py --rows 1000000 --variants usearch:i8,faiss:i8 --skip-concurrent

Results go to WORK/results-ROWS.json and a table on stdout; WORK defaults to /tmp/cairn-ann.

One file past 500 lines: every step runs this same file again in a fresh subprocess (`--step`),
so the three libraries' adapters and the steps they run sit together.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import numpy.typing as npt

DIM = 384
CHUNK = 50_000
QUERIES = 300
TARGET = 0.98
SHARES = (0.5, 0.1, 0.01, 0.001)
EFS = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
RANDOM_EFS = (64, 256, 1024)  # random queries have no close neighbours: a coarse sweep
M, EF_CONSTRUCTION = 16, 128
MUTATIONS = 1000
RERANK_FETCH = 40
SEED = 20250101

Floats = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]
Arrays = dict[str, npt.NDArray[Any]]


# -- measurements shared by every process -----------------------------------------------------


def rss_mb() -> dict[str, float]:
    """VmRSS, RssAnon, RssFile and the peak VmHWM of this process, in MB."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key = line.split(":")[0]
        if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
            out[key] = round(int(line.split()[1]) / 1024, 1)
    return out


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = np.array(seconds) * 1000
    return {"p50": round(float(np.percentile(ms, 50)), 3), "p95": round(float(np.percentile(ms, 95)), 3)}


def recall(found: list[Ints], truth: Ints, k: int) -> float:
    hits = [len(set(f[:k].tolist()) & set(t[:k].tolist())) for f, t in zip(found, truth, strict=True)]
    return round(sum(hits) / (k * len(truth)), 4)


def unit(matrix: Floats) -> Floats:
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def drop_from_page_cache(path: Path) -> None:
    """Evict the file's clean pages so the next open reads from disk (cold)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


# -- data --------------------------------------------------------------------------------------


def base_path(work: Path, rows: int) -> Path:
    return work / f"base-{rows}.f32"


def ensure_base(work: Path, rows: int, corpus: str) -> Path:
    """rows × DIM unit vectors, written CHUNK rows at a time.

    `random`: independent random unit vectors (no structure: every neighbour is a near-tie).
    `clustered`: x = unit(sqrt(.35) topic + sqrt(.40) subtopic + sqrt(.25) noise) with subtopics
    of ~20 rows and topics of ~50 subtopics, so a row's subtopic-mates sit at cosine ~0.75 and its
    topic-mates at ~0.35, as related chunks do with a sentence embedder; rows of a subtopic are
    spread over the file, not adjacent.
    """
    path = base_path(work, rows)
    if path.exists() and path.stat().st_size == rows * DIM * 4:
        return path
    subtopics, topics = max(1, rows // 20), max(1, rows // 1000)
    if corpus == "clustered":
        rng = np.random.default_rng([SEED, 1])
        topic_vecs = unit(rng.standard_normal((topics, DIM), dtype=np.float32))
        sub_vecs = unit(rng.standard_normal((subtopics, DIM), dtype=np.float32))
        mixed = np.sqrt(0.35) * topic_vecs[np.arange(subtopics) % topics] + np.sqrt(0.40) * sub_vecs
    tmp = path.with_suffix(".tmp")
    with tmp.open("wb") as fh:
        for c, first in enumerate(range(0, rows, CHUNK)):
            rng = np.random.default_rng([SEED, 2, c])
            block = unit(rng.standard_normal((min(CHUNK, rows - first), DIM), dtype=np.float32))
            if corpus == "clustered":
                sub = (np.arange(first, first + len(block), dtype=np.int64) * 1_000_003) % subtopics
                block = unit((mixed[sub] + np.sqrt(0.25) * block).astype(np.float32))
            fh.write(block.astype("<f4").tobytes())
    tmp.rename(path)
    return path


def open_base(work: Path, rows: int) -> Floats:
    return np.asarray(np.memmap(base_path(work, rows), dtype="<f4", mode="r", shape=(rows, DIM)))


def workload(rows: int) -> dict[str, Any]:
    """Queries, allowed-row masks and the rows to add and delete; all seeded."""
    rng = np.random.default_rng([SEED, 10**6])
    # Sources are drawn from the first 100k rows so both sizes ask the same questions.
    sources = rng.choice(min(rows, 100_000), size=QUERIES, replace=False)
    cosines = rng.uniform(0.6, 0.9, size=QUERIES).astype(np.float32)
    noise = unit(rng.standard_normal((QUERIES, DIM), dtype=np.float32))
    random_q = unit(rng.standard_normal((QUERIES, DIM), dtype=np.float32))
    masks = {}
    for share in SHARES:
        allowed = rng.choice(rows, size=max(1, round(share * rows)), replace=False)
        mask = np.zeros(rows, dtype=np.bool_)
        mask[allowed] = True
        masks[share] = mask
    added = unit(rng.standard_normal((MUTATIONS, DIM), dtype=np.float32))
    return {
        "sources": sources,
        "cosines": cosines,
        "noise": noise,
        "random": random_q,
        "masks": masks,
        "added": added,
    }


def noisy_queries(base: Floats, w: dict[str, Any]) -> Floats:
    v = np.array(base[w["sources"]], dtype=np.float32)
    u = w["noise"] - np.sum(w["noise"] * v, axis=1, keepdims=True) * v  # orthogonal to the source
    u = unit(u)
    c = w["cosines"][:, None]
    return unit(c * v + np.sqrt(1 - c * c) * u).astype(np.float32)


def merge_top(best_s: Floats, best_i: Ints, s: Floats, ids: Ints, k: int) -> tuple[Floats, Ints]:
    all_s = np.concatenate([best_s, s], axis=1)
    all_i = np.concatenate([best_i, ids], axis=1)
    top = np.argpartition(-all_s, k - 1, axis=1)[:, :k]
    top_s = np.take_along_axis(all_s, top, 1)
    order = np.argsort(-top_s, axis=1, kind="stable")
    return np.take_along_axis(top_s, order, 1), np.take_along_axis(
        np.take_along_axis(all_i, top, 1), order, 1
    )


def ground_truth(work: Path, rows: int) -> Arrays:
    """Exact top-100 of both query sets and top-10 of the noisy set under each mask."""
    cache = work / f"truth-{rows}.npz"
    if cache.exists():
        return dict(np.load(cache))
    base = open_base(work, rows)
    w = workload(rows)
    queries = {"noisy": noisy_queries(base, w), "random": w["random"]}
    best: dict[str, tuple[Floats, Ints]] = {}
    plans = [(name, q, None, 100) for name, q in queries.items()]
    plans += [(f"noisy@{share}", queries["noisy"], mask, 10) for share, mask in w["masks"].items()]
    for name, _q, _mask, k in plans:
        best[name] = (np.full((QUERIES, k), -np.inf, np.float32), np.full((QUERIES, k), -1, np.int64))
    for first in range(0, rows, CHUNK):
        block = np.array(base[first : first + CHUNK], dtype=np.float32)
        ids = np.arange(first, first + len(block), dtype=np.int64)
        scores = {name: q @ block.T for name, q in queries.items()}
        for name, _q, mask, k in plans:
            s = scores[name.split("@")[0]]
            if mask is not None:
                s = np.where(mask[first : first + len(block)], s, -np.inf).astype(np.float32)
            cut = min(k, s.shape[1])
            top = np.argpartition(-s, cut - 1, axis=1)[:, :cut]
            best[name] = merge_top(*best[name], np.take_along_axis(s, top, 1), ids[top], k)
    truth: Arrays = {name: ids for name, (_s, ids) in best.items()}
    truth["queries_noisy"] = queries["noisy"]
    np.savez(cache, **cast("dict[str, Any]", truth))
    return truth


def neighbour_cosines(work: Path, rows: int, truth: Arrays) -> str:
    base = open_base(work, rows)
    q = truth["queries_noisy"]
    vectors = np.array(base[truth["noisy"][:, :10].ravel()]).reshape(QUERIES, 10, DIM)
    top = np.einsum("qkd,qd->qk", vectors, q)
    return (
        f"noisy queries' exact top-10 cosines: 1st median {np.median(top[:, 0]):.2f}, "
        f"2nd-10th median {np.median(top[:, 1:]):.2f} (10th p5-p95 {np.percentile(top[:, 9], 5):.2f}"
        f"-{np.percentile(top[:, 9], 95):.2f})"
    )


# -- the libraries -----------------------------------------------------------------------------


class Adapter:
    """One library and storage type behind the few calls the benchmark makes."""

    name = ""
    mmap_mode = ""
    deleted_error = ""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype
        self.index: Any = None

    def new(self, capacity: int, threads: int) -> None:
        raise NotImplementedError

    def add(self, ids: Ints, vectors: Floats, threads: int) -> None:
        raise NotImplementedError

    def save(self, path: Path) -> None:
        raise NotImplementedError

    def open(self, path: Path, mmap: bool, capacity: int) -> None:
        raise NotImplementedError

    def set_ef(self, ef: int) -> None:
        raise NotImplementedError

    def search(self, q: Floats, k: int) -> Ints:
        raise NotImplementedError

    def filtered(self, q: Floats, k: int, allowed: Any, share: float) -> Ints:
        raise NotImplementedError

    def allowed(self, mask: npt.NDArray[np.bool_]) -> Any:
        return mask

    def delete(self, ids: Ints) -> str:
        raise NotImplementedError

    def files(self, path: Path) -> list[Path]:
        return [path]


class Usearch(Adapter):
    name = "usearch"
    mmap_mode = "Index.restore(view=True)"

    def new(self, capacity: int, threads: int) -> None:
        from usearch.index import Index

        self.index = Index(
            ndim=DIM,
            metric="ip",
            dtype=self.dtype,
            connectivity=M,
            expansion_add=EF_CONSTRUCTION,
            multi=False,
        )

    def add(self, ids: Ints, vectors: Floats, threads: int) -> None:
        self.index.add(ids, vectors, threads=threads)

    def save(self, path: Path) -> None:
        self.index.save(str(path))

    def open(self, path: Path, mmap: bool, capacity: int) -> None:
        from usearch.index import Index

        self.index = Index.restore(str(path), view=mmap)

    def set_ef(self, ef: int) -> None:
        self.index.expansion_search = ef

    def search(self, q: Floats, k: int) -> Ints:
        return np.asarray(self.index.search(q, k, threads=1).keys, dtype=np.int64)

    def filtered(self, q: Floats, k: int, allowed: Any, share: float) -> Ints:
        # No predicate in the Python binding: fetch enough that ~2k allowed rows survive (at most
        # 10,000: past that the exact search over the allowed rows is cheaper anyway).
        fetch = min(len(allowed), 10_000, max(k, int(np.ceil(2 * k / share))))
        keys = np.asarray(self.index.search(q, fetch, threads=1).keys, dtype=np.int64)
        return keys[allowed[keys]][:k]

    def delete(self, ids: Ints) -> str:
        self.index.remove(ids)
        return "remove() (tombstone; compact=True rebuilds links)"


class Faiss(Adapter):
    name = "faiss"
    mmap_mode = "read_index(IO_FLAG_MMAP_IFC)"

    def new(self, capacity: int, threads: int) -> None:
        import faiss

        faiss.omp_set_num_threads(threads)
        if self.dtype == "f32":
            self.index = faiss.IndexHNSWFlat(DIM, M, faiss.METRIC_INNER_PRODUCT)
        else:
            qt: Any = {"f16": faiss.ScalarQuantizer.QT_fp16, "i8": faiss.ScalarQuantizer.QT_8bit}[self.dtype]
            self.index = faiss.IndexHNSWSQ(DIM, qt, M, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = EF_CONSTRUCTION
        self.trained = self.dtype == "f32"

    def add(self, ids: Ints, vectors: Floats, threads: int) -> None:
        import faiss

        faiss.omp_set_num_threads(threads)
        if not self.trained:
            self.index.train(vectors)  # QT_8bit learns per-dimension ranges from the first chunk
            self.trained = True
        assert int(ids[0]) == self.index.ntotal  # HNSW ids are sequential: the vector row
        self.index.add(vectors)

    def save(self, path: Path) -> None:
        import faiss

        faiss.write_index(self.index, str(path))

    def open(self, path: Path, mmap: bool, capacity: int) -> None:
        import faiss

        faiss.omp_set_num_threads(1)
        self.trained = True
        self.index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP_IFC if mmap else 0)

    def set_ef(self, ef: int) -> None:
        self.index.hnsw.efSearch = ef
        self.ef = ef

    def search(self, q: Floats, k: int) -> Ints:
        return np.asarray(self.index.search(q[None, :], k)[1][0], dtype=np.int64)

    def allowed(self, mask: npt.NDArray[np.bool_]) -> Any:
        import faiss

        bits = np.packbits(mask, bitorder="little")
        return bits, faiss.IDSelectorBitmap(mask.size, faiss.swig_ptr(bits))

    def filtered(self, q: Floats, k: int, allowed: Any, share: float) -> Ints:
        import faiss

        params = cast(Any, faiss).SearchParametersHNSW()
        params.efSearch = self.ef
        params.sel = allowed[1]
        ids = np.asarray(self.index.search(q[None, :], k, params=params)[1][0], dtype=np.int64)
        return ids[ids >= 0]

    def delete(self, ids: Ints) -> str:
        try:
            self.index.remove_ids(np.asarray(ids, dtype=np.int64))
            return "remove_ids()"
        except RuntimeError as error:
            self.deleted_error = str(error).splitlines()[0][:120]
            return "not supported by IndexHNSW: excluded by an IDSelector"


class Hnswlib(Adapter):
    name = "hnswlib"
    mmap_mode = "none (load_index reads the whole file)"

    def new(self, capacity: int, threads: int) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=DIM)
        self.index.init_index(max_elements=capacity, ef_construction=EF_CONSTRUCTION, M=M)

    def add(self, ids: Ints, vectors: Floats, threads: int) -> None:
        self.index.add_items(vectors, ids, num_threads=threads)

    def save(self, path: Path) -> None:
        self.index.save_index(str(path))

    def open(self, path: Path, mmap: bool, capacity: int) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=DIM)
        self.index.load_index(str(path), max_elements=capacity)

    def set_ef(self, ef: int) -> None:
        self.index.set_ef(ef)

    def search(self, q: Floats, k: int) -> Ints:
        return np.asarray(self.index.knn_query(q, k, num_threads=1)[0][0], dtype=np.int64)

    def allowed(self, mask: npt.NDArray[np.bool_]) -> Any:
        return bytearray(mask.astype(np.uint8).tobytes())

    def filtered(self, q: Floats, k: int, allowed: Any, share: float) -> Ints:
        def passes(label: int) -> bool:
            return label < len(allowed) and allowed[label] == 1

        try:
            return np.asarray(self.index.knn_query(q, k, num_threads=1, filter=passes)[0][0], dtype=np.int64)
        except RuntimeError:  # fewer than k allowed rows reachable
            return np.zeros(0, dtype=np.int64)

    def delete(self, ids: Ints) -> str:
        for i in ids.tolist():
            self.index.mark_deleted(i)
        return "mark_deleted()"


ADAPTERS: dict[str, type[Adapter]] = {"usearch": Usearch, "faiss": Faiss, "hnswlib": Hnswlib}


def adapter(variant: str) -> Adapter:
    lib, dtype = variant.split(":")
    return ADAPTERS[lib](dtype)


# -- worker steps (each in a fresh process) ----------------------------------------------------


def step_build(work: Path, rows: int, variant: str, threads: int, path: Path | None) -> dict[str, Any]:
    a = adapter(variant)
    base = open_base(work, rows)
    t = time.perf_counter()
    a.new(rows + MUTATIONS, threads)
    for first in range(0, rows, CHUNK):
        block = np.array(base[first : first + CHUNK], dtype=np.float32)
        a.add(np.arange(first, first + len(block), dtype=np.int64), block, threads)
    built = time.perf_counter() - t
    out: dict[str, Any] = {"build_s": round(built, 1), "rss_after_build": rss_mb()}
    if path is not None:
        a.save(path)
        out["size_mb"] = round(sum(p.stat().st_size for p in a.files(path)) / 1e6, 1)
    return out


def step_open(work: Path, rows: int, variant: str, path: Path, mmap: bool) -> dict[str, Any]:
    a = adapter(variant)
    for p in a.files(path):
        drop_from_page_cache(p)
    before = rss_mb()
    t = time.perf_counter()
    a.open(path, mmap, rows + MUTATIONS)
    opened = time.perf_counter() - t
    after_open = rss_mb()
    a.set_ef(64)
    q = unit(np.random.default_rng(1).standard_normal((1, DIM), dtype=np.float32))[0]
    t = time.perf_counter()
    a.search(q, 10)
    first = time.perf_counter() - t
    return {
        "open_s": round(opened, 3),
        "first_query_ms": round(first * 1000, 1),
        "rss_before": before,
        "rss_after_open": after_open,
        "rss_after_first_query": rss_mb(),
    }


def timed(fn: Callable[[Floats], Ints], queries: Floats) -> tuple[list[Ints], list[float]]:
    found, seconds = [], []
    for q in queries:
        t = time.perf_counter()
        found.append(fn(q))
        seconds.append(time.perf_counter() - t)
    return found, seconds


def rescore(base: Floats, ids: Ints, q: Floats, k: int) -> Ints:
    ids = np.sort(ids[ids >= 0])
    sims = np.einsum("ij,j->i", base[ids], q)
    return ids[np.argsort(-sims)[:k]]


def rescored(base: Floats, a: Adapter, k: int) -> Callable[[Floats], Ints]:
    """ANN top-RERANK_FETCH, then exact dot products from the float32 file."""
    return lambda q: rescore(base, a.search(q, RERANK_FETCH), q, k)


def filtered_search(base: Floats, a: Adapter, k: int, allowed: Any, share: float) -> Callable[[Floats], Ints]:
    """The library's filtered search; i8/f16 storages fetch RERANK_FETCH and re-score exactly."""
    if a.dtype == "f32":
        return lambda q: a.filtered(q, k, allowed, share)
    return lambda q: rescore(base, a.filtered(q, RERANK_FETCH, allowed, share), q, k)


def sweep(
    a: Adapter, fn: Callable[[Floats], Ints], queries: Floats, truth: Ints, efs: tuple[int, ...] = EFS
) -> list[dict[str, Any]]:
    rows = []
    for ef in efs:
        a.set_ef(ef)
        found, seconds = timed(fn, queries)
        rows.append({"ef": ef, "recall@10": recall(found, truth, 10), **percentiles(seconds)})
        if rows[-1]["recall@10"] >= TARGET:
            break
    return rows


def chosen(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return next((r for r in rows if r["recall@10"] >= TARGET), rows[-1])


def step_query(work: Path, rows: int, variant: str, path: Path, mmap: bool) -> dict[str, Any]:
    a = adapter(variant)
    a.open(path, mmap, rows + MUTATIONS)
    base = open_base(work, rows)
    truth = ground_truth(work, rows)
    w = workload(rows)
    sets = {"noisy": truth["queries_noisy"], "random": w["random"]}
    a.set_ef(32)
    timed(lambda q: a.search(q, 10), sets["random"][:30])  # warm up
    out: dict[str, Any] = {"mode": a.mmap_mode if mmap else "loaded"}
    for name, queries in sets.items():
        efs: tuple[int, ...] = EFS if name == "noisy" else RANDOM_EFS
        out[f"sweep_{name}"] = sweep(a, lambda q: a.search(q, 10), queries, truth[name], efs)
        if a.dtype != "f32":
            out[f"sweep_{name}_rescored"] = sweep(a, rescored(base, a, 10), queries, truth[name], efs)
    out["rss_after_searches"] = rss_mb()
    ef = chosen(out["sweep_noisy" if a.dtype == "f32" else "sweep_noisy_rescored"])["ef"]
    a.set_ef(max(ef, 100))
    found, seconds = timed(lambda q: a.search(q, 100), sets["noisy"])
    out["pool100"] = {
        "ef": max(ef, 100),
        "recall@10": recall(found, truth["noisy"], 10),
        "recall@100": recall(found, truth["noisy"], 100),
        **percentiles(seconds),
    }
    filtered = {}
    for share, mask in w["masks"].items():
        fn = filtered_search(base, a, 10, a.allowed(mask), share)
        n = 60 if share <= 0.01 and a.name == "usearch" else QUERIES  # fetches up to 10,000 each
        # usearch's post-filter fetch does not depend on ef: one setting is enough.
        efs = (ef,) if a.name == "usearch" else tuple(e for e in EFS if e >= ef)
        filtered[str(share)] = sweep(a, fn, sets["noisy"][:n], truth[f"noisy@{share}"][:n], efs)
    out["filtered"] = filtered
    out["rss_after_all"] = rss_mb()
    return out


def step_exact(work: Path, rows: int) -> dict[str, Any]:
    """Today's vector leg: cairn's VectorFile.similarities + argpartition, unfiltered and by mask."""
    from cairn.adapters.local.vector_store import VectorFile

    vf = VectorFile(base_path(work, rows), DIM)
    truth = ground_truth(work, rows)
    w = workload(rows)
    queries = truth["queries_noisy"]

    def run(vec_rows: Ints) -> Callable[[Floats], Ints]:
        def search(q: Floats) -> Ints:
            sims = vf.similarities(vec_rows, q)
            top = np.argpartition(-sims, 9)[:10]
            return vec_rows[top[np.argsort(-sims[top])]]

        return search

    every = np.arange(rows, dtype=np.int64)
    timed(run(every), queries[:20])
    out: dict[str, Any] = {}
    found, seconds = timed(run(every), queries)
    out["all"] = {"recall@10": recall(found, truth["noisy"], 10), **percentiles(seconds)}
    for share, mask in w["masks"].items():
        found, seconds = timed(run(np.flatnonzero(mask)), queries)
        out[str(share)] = {"recall@10": recall(found, truth[f"noisy@{share}"], 10), **percentiles(seconds)}
    out["rss"] = rss_mb()
    return out


def step_mutate(work: Path, rows: int, variant: str, path: Path) -> dict[str, Any]:
    a = adapter(variant)
    a.open(path, False, rows + MUTATIONS)
    truth = ground_truth(work, rows)
    w = workload(rows)
    queries = truth["queries_noisy"]
    ef = 64
    a.set_ef(ef)
    out: dict[str, Any] = {}
    seconds = []
    t0 = time.perf_counter()
    for i, vector in enumerate(w["added"]):
        t = time.perf_counter()
        a.add(np.array([rows + i], dtype=np.int64), vector[None, :], 1)
        seconds.append(time.perf_counter() - t)
    out["add_1000_s"] = round(time.perf_counter() - t0, 3)
    out["add_one_ms"] = percentiles(seconds)
    found_added = [a.search(v, 1)[:1] for v in w["added"]]
    out["added_found_top1"] = round(
        float(np.mean([f.size and f[0] == rows + i for i, f in enumerate(found_added)])), 4
    )
    # Delete each noisy query's exact best match (so a leak would show) plus other rows.
    victims = np.unique(truth["noisy"][:, 0])
    rng = np.random.default_rng([SEED, 7])
    extra = rng.choice(np.setdiff1d(np.arange(rows), victims), MUTATIONS - victims.size, replace=False)
    deleted = np.concatenate([victims, extra]).astype(np.int64)
    t = time.perf_counter()
    how = a.delete(deleted)
    out["delete_1000_s"] = round(time.perf_counter() - t, 3)
    out["delete_how"] = how
    if a.deleted_error:
        out["delete_error"] = a.deleted_error
    leaked = 0
    if how.startswith("not supported"):
        mask = np.ones(rows + MUTATIONS, dtype=np.bool_)
        mask[deleted] = False
        allowed = a.allowed(mask)
        results = [a.filtered(q, 10, allowed, 1.0) for q in queries]
    else:
        results = [a.search(q, 10) for q in queries]
    dead = set(deleted.tolist())
    leaked = sum(len(dead & set(r.tolist())) for r in results)
    out["deleted_returned"] = leaked
    out["results_short"] = sum(1 for r in results if len(r) < 10)
    return out


def step_concurrent(work: Path, rows: int, variant: str, path: Path) -> dict[str, Any]:
    a = adapter(variant)
    a.open(path, False, rows + MUTATIONS)
    a.set_ef(64)
    w = workload(rows)
    errors: list[str] = []
    done = threading.Event()

    def writer() -> None:
        try:
            for i, vector in enumerate(w["added"]):
                a.add(np.array([rows + i], dtype=np.int64), vector[None, :], 1)
        except Exception as error:  # reported, not raised: the point is whether it breaks
            errors.append(f"add: {error!r}"[:200])
        finally:
            done.set()

    thread = threading.Thread(target=writer)
    searches, seconds = 0, []
    thread.start()
    while not done.is_set():
        q = w["random"][searches % QUERIES]
        t = time.perf_counter()
        try:
            a.search(q, 10)
        except Exception as error:
            errors.append(f"search: {error!r}"[:200])
            break
        seconds.append(time.perf_counter() - t)
        searches += 1
    thread.join()
    return {"searches_during_adds": searches, "errors": errors, **(percentiles(seconds) if seconds else {})}


STEPS: dict[str, Callable[..., dict[str, Any]]] = {
    "build": step_build,
    "open": step_open,
    "query": step_query,
    "exact": step_exact,
    "mutate": step_mutate,
    "concurrent": step_concurrent,
}


# -- the parent --------------------------------------------------------------------------------


def run_step(step: str, timeout: float, **kwargs: Any) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--step", step, "--step-args", json.dumps(kwargs, default=str)]
    env = {**os.environ, "OMP_NUM_THREADS": "2", "OPENBLAS_NUM_THREADS": "1"}
    t = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False)
    except subprocess.TimeoutExpired:
        return {"failed": f"timed out after {timeout:.0f} s"}
    wall = round(time.perf_counter() - t, 1)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] if done.stderr.strip() else []
        return {"failed": f"exit {done.returncode}", "stderr": tail, "wall_s": wall}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall_s"] = wall
    return result


def fmt_ms(r: dict[str, Any]) -> str:
    return f"{r['p50']:.2f}/{r['p95']:.2f}"


def table(rows: int, results: dict[str, Any]) -> str:
    lines = [f"## {rows:,} rows × {DIM} dims (M={M}, ef_construction={EF_CONSTRUCTION})", ""]
    ex = results.get("exact", {})
    if "all" in ex:
        parts = [f"all {fmt_ms(ex['all'])}"] + [
            f"{float(s) * 100:g}% {fmt_ms(ex[s])}" for s in map(str, SHARES)
        ]
        lines += ["exact (VectorFile einsum + argpartition), p50/p95 ms: " + ", ".join(parts), ""]
    head = (
        "| variant | build 1t / 2t s | size MB | RSS build MB | open mmap s (RSS MB) | open load s (RSS MB)"
        " | raw top-10 noisy: ef → recall p50/p95 ms | raw random | re-scored top-40 noisy / random"
        " | top-100 pool r@10 r@100 p95 | RSS 300 searches MB |"
    )
    lines += [head, "|" + "---|" * (head.count("|") - 1)]
    for variant, r in results.items():
        if variant == "exact":
            continue
        b1, b2 = r.get("build_1t", {}), r.get("build_2t", {})
        q = r.get("query", {})
        if "failed" in b2 or "failed" in q:
            lines.append(f"| {variant} | {b2.get('failed', '')} {q.get('failed', '')} |")
            continue

        def sw(key: str, q: dict[str, Any] = q) -> str:
            if key not in q:
                return "-"
            c = chosen(q[key])
            return f"{c['ef']} → {c['recall@10']:.3f} {fmt_ms(c)}"

        om, ol = r.get("open_mmap", {}), r.get("open_load", {})
        mm = (
            f"{om['open_s']} ({om['rss_after_first_query']['VmRSS']})"
            if "open_s" in om
            else om.get("failed", "-")
        )
        lo = f"{ol['open_s']} ({ol['rss_after_first_query']['VmRSS']})" if "open_s" in ol else "-"
        pool = q["pool100"]
        lines.append(
            f"| {variant} | {b1.get('build_s', '-')} / {b2['build_s']} | {b2['size_mb']} "
            f"| {b2['rss_after_build']['VmRSS']:.0f} | {mm} | {lo} "
            f"| {sw('sweep_noisy')} | {sw('sweep_random')} "
            f"| {sw('sweep_noisy_rescored')} / {sw('sweep_random_rescored')} "
            f"| {pool['recall@10']:.3f} {pool['recall@100']:.3f} {pool['p95']:.2f} "
            f"| {q['rss_after_searches']['VmRSS']:.0f} |"
        )
    lines += [
        "",
        "Filtered (noisy queries; i8/f16 re-scored from the float32 file; ef raised until recall >= 0.98):"
        " recall@10 p50/p95 ms",
        "",
    ]
    lines.append("| variant | how | " + " | ".join(f"{s * 100:g}%" for s in SHARES) + " |")
    lines.append("|---|---|" + "---|" * len(SHARES))
    how = {
        "usearch": "post-filter, fetch 2k/share",
        "faiss": "IDSelectorBitmap",
        "hnswlib": "filter callback",
    }
    for variant, r in results.items():
        f = r.get("query", {}).get("filtered") if variant != "exact" else None
        if f:
            picks = [chosen(f[str(s)]) for s in SHARES]
            cells = [f"ef {c['ef']}: {c['recall@10']:.3f} {fmt_ms(c)}" for c in picks]
            lines.append(f"| {variant} | {how[variant.split(':')[0]]} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Mutations on the loaded index (1,000 single-row adds, then 1,000 deletes); concurrency",
        "",
    ]
    lines[-2] = lines[-2][:100]
    lines.append(
        "| variant | add 1000 s (one p50/p95 ms) | added found top-1 | delete 1000 s | delete how"
        " | deleted returned | search during adds |"
    )
    lines.append("|---|---|---|---|---|---|---|")
    for variant, r in results.items():
        m, c = r.get("mutate"), r.get("concurrent", {})
        if not m:
            continue
        if "failed" in m:
            lines.append(f"| {variant} | {m['failed']} {m.get('stderr')} |")
            continue
        conc = (
            c.get("failed", "")
            + (f" {c['stderr']}" if "stderr" in c else "")
            + (f"{c['searches_during_adds']} searches, errors {c['errors']}" if "errors" in c else "")
        ) or "-"
        lines.append(
            f"| {variant} | {m['add_1000_s']} ({fmt_ms(m['add_one_ms'])}) | {m['added_found_top1']} "
            f"| {m['delete_1000_s']} | {m['delete_how']} | {m['deleted_returned']} | {conc} |"
        )
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument(
        "--variants",
        default="usearch:f32,usearch:f16,usearch:i8,faiss:f32,faiss:i8,hnswlib:f32",
        help="library:storage pairs (storage f32, f16 or i8; hnswlib only f32)",
    )
    p.add_argument("--work", type=Path, default=Path("/tmp/cairn-ann"))
    p.add_argument("--corpus", choices=("clustered", "random"), default="clustered")
    p.add_argument("--single-thread-build", action="store_true", help="also time a 1-thread build")
    p.add_argument("--skip-concurrent", action="store_true")
    p.add_argument("--step", help=argparse.SUPPRESS)
    p.add_argument("--step-args", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.step:
        kwargs = json.loads(args.step_args)
        for key in ("work", "path"):
            if kwargs.get(key) is not None:
                kwargs[key] = Path(kwargs[key])
        print(json.dumps(STEPS[args.step](**kwargs)))
        return

    work: Path = args.work / args.corpus
    work.mkdir(parents=True, exist_ok=True)
    rows = args.rows
    t0 = time.perf_counter()
    ensure_base(work, rows, args.corpus)
    truth = ground_truth(work, rows)
    print(f"{args.corpus} corpus and ground truth: {time.perf_counter() - t0:.0f} s", flush=True)
    print(neighbour_cosines(work, rows, truth), flush=True)
    results: dict[str, Any] = {"exact": run_step("exact", 1800, work=work, rows=rows)}
    print("exact", json.dumps(results["exact"]), flush=True)
    common = {"work": work, "rows": rows}
    for variant in args.variants.split(","):
        path = work / f"{variant.replace(':', '-')}-{rows}.index"
        r: dict[str, Any] = {}
        if args.single_thread_build:
            r["build_1t"] = run_step("build", 3600, **common, variant=variant, threads=1, path=None)
        r["build_2t"] = run_step("build", 3600, **common, variant=variant, threads=2, path=path)
        print(variant, "built", json.dumps(r), flush=True)
        if "failed" not in r["build_2t"]:
            if variant.split(":")[0] != "hnswlib":
                r["open_mmap"] = run_step("open", 600, **common, variant=variant, path=path, mmap=True)
            r["open_load"] = run_step("open", 600, **common, variant=variant, path=path, mmap=False)
            mmap = variant.split(":")[0] != "hnswlib"
            r["query"] = run_step("query", 1800, **common, variant=variant, path=path, mmap=mmap)
            r["mutate"] = run_step("mutate", 1800, **common, variant=variant, path=path)
            if not args.skip_concurrent:
                r["concurrent"] = run_step("concurrent", 600, **common, variant=variant, path=path)
            path.unlink(missing_ok=True)
        results[variant] = r
        print(variant, "done", f"{time.perf_counter() - t0:.0f} s", flush=True)
        (work / f"results-{rows}.json").write_text(json.dumps(results, indent=1, default=str))
    print()
    print(f"corpus: {args.corpus}; {neighbour_cosines(work, rows, truth)}")
    print(table(rows, results))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
