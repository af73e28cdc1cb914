"""HTML extraction quality: main-content recall and furniture leakage per extractor (docs/CHUNKING.md).

Each page in tests/fixtures/html/ comes with phrases of its main content and of its furniture
(navigation, sidebars, pop-ups, comments, footers) in expectations.json. For every extractor this
prints, per page and in total, the share of main phrases found in the extracted text (recall,
higher is better), the share of furniture phrases found (leakage, lower is better) and the mean
time per page. Matching ignores case, collapses whitespace and drops markdown's `*` and backquotes.

Extractors: `baseline` (the tag-dropping extraction Cairn used before main-content selection),
`rules` (cairn.ingest.html today), and trafilatura with its defaults and with favor_recall when it
is importable (it is not a dependency; install it to compare, e.g. `pip install trafilatura`).

    .venv/bin/python bench/html_extraction.py
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

from cairn.ingest import html

FIXTURES = Path(__file__).resolve().parents[1] / "tests/fixtures/html"
RUNS = 5
# What the extractor dropped before it selected the main content and pruned hidden elements.
_BASELINE_DROP = frozenset(
    {"script", "style", "nav", "footer", "noscript", "template", "svg", "iframe", "head", "form", "button"}
)

Extractor = Callable[[bytes], str]


def baseline(data: bytes) -> str:
    soup = html.parse(data)
    for tag in soup.find_all(_BASELINE_DROP):
        tag.decompose()
    return html.render(soup)


def rules(data: bytes) -> str:
    return html.html_to_text(data)[0]


def trafilatura_extractors() -> dict[str, Extractor]:
    try:
        import trafilatura
    except ImportError:
        print("trafilatura is not installed: only baseline and rules are measured\n")
        return {}

    def default(data: bytes) -> str:
        return trafilatura.extract(data.decode("utf-8"), output_format="markdown", include_tables=True) or ""

    def recall(data: bytes) -> str:
        text = trafilatura.extract(
            data.decode("utf-8"), output_format="markdown", include_tables=True, favor_recall=True
        )
        return text or ""

    return {"trafilatura": default, "trafilatura-recall": recall}


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[*`]", "", text)).strip().lower()


def score(extract: Extractor, pages: dict[str, dict[str, list[str]]]) -> dict[str, tuple[int, int, int, int]]:
    """Per page: (main found, main total, furniture found, furniture total)."""
    result = {}
    for name, labels in pages.items():
        text = normalized(extract((FIXTURES / name).read_bytes()))
        main = sum(normalized(p) in text for p in labels["main"])
        furniture = sum(normalized(p) in text for p in labels["furniture"])
        result[name] = (main, len(labels["main"]), furniture, len(labels["furniture"]))
    return result


def mean_ms(extract: Extractor, pages: list[str]) -> float:
    blobs = [(FIXTURES / name).read_bytes() for name in pages]
    started = time.perf_counter()
    for _ in range(RUNS):
        for data in blobs:
            extract(data)
    return (time.perf_counter() - started) * 1000 / (RUNS * len(blobs))


def main() -> None:
    expectations = json.loads((FIXTURES / "expectations.json").read_text())
    pages = {name: labels for name, labels in expectations.items() if not name.startswith("_")}
    extractors: dict[str, Extractor] = {"baseline": baseline, "rules": rules, **trafilatura_extractors()}
    width = max(len(name) for name in pages)
    print(f"{'page':<{width}}  " + "  ".join(f"{name:>18}" for name in extractors))
    print(f"{'':<{width}}  " + "  ".join(f"{'recall / leakage':>18}" for _ in extractors))
    scores = {name: score(extract, pages) for name, extract in extractors.items()}
    for page in pages:
        cells = []
        for name in extractors:
            found, total, leaked, furniture = scores[name][page]
            cells.append(f"{found:>3}/{total:<3} {leaked:>4}/{furniture:<4}")
        print(f"{page:<{width}}  " + "  ".join(f"{cell:>18}" for cell in cells))
    print()
    for name, extract in extractors.items():
        found = sum(s[0] for s in scores[name].values())
        total = sum(s[1] for s in scores[name].values())
        leaked = sum(s[2] for s in scores[name].values())
        furniture = sum(s[3] for s in scores[name].values())
        print(
            f"{name:<20} main recall {found / total:6.1%} ({found}/{total})   "
            f"furniture leakage {leaked / furniture:6.1%} ({leaked}/{furniture})   "
            f"{mean_ms(extract, list(pages)):6.1f} ms/page"
        )


if __name__ == "__main__":
    main()
