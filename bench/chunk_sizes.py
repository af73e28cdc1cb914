"""Chunk sizes in MiniLM tokens for several target/overlap settings (docs/CHUNKING.md).

all-MiniLM-L6-v2 truncates its input at 256 word pieces, so whatever a chunk holds past that is
never embedded. This prints, per setting, the chunk count and the mean / p95 / max chunk length
in tokens, and the share of chunks over 256, on this repository's own markdown (README.md and
docs/*.md) unless --files names other files.

Tokens are counted with the bundled tokenizer (cairn/models/all-minilm-l6-v2/tokenizer.json)
when it exists; otherwise the script says so and estimates 1 token ≈ 4 characters, which
undercounts technical markdown (code and punctuation split into many pieces).

    .venv/bin/python bench/chunk_sizes.py
    .venv/bin/python bench/chunk_sizes.py --tokenizer path/to/tokenizer.json --files a.md b.md
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Callable
from pathlib import Path

from cairn.ingest.chunking import chunk_text
from cairn.ingest.markdown import split_front_matter

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TOKENIZER = REPO / "layers/core/cairn/models/all-minilm-l6-v2/tokenizer.json"
SETTINGS = [(600, 100), (700, 120), (800, 150), (1000, 150), (1200, 200), (1600, 250)]
MODEL_LIMIT = 256


def corpus_files() -> list[Path]:
    """This repository's own markdown: README.md and docs/*.md."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def token_counter(path: Path) -> tuple[Callable[[str], int], str]:
    if path.exists():
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(path))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        # Counts include [CLS] and [SEP], as the model's 256 limit does.
        return (
            lambda text: len(tokenizer.encode(text).ids)
        ), f"MiniLM tokenizer ({path.name}, incl. CLS/SEP)"
    return (lambda text: math.ceil(len(text) / 4) + 2), "ESTIMATE: 1 token ≈ 4 chars (+2 for CLS/SEP)"


def percentile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokenizer", type=Path, default=DEFAULT_TOKENIZER)
    parser.add_argument(
        "--files",
        "--corpus",
        type=Path,
        nargs="+",
        default=None,
        help="markdown files to measure (default: README.md and docs/*.md)",
    )
    args = parser.parse_args()

    files = args.files or corpus_files()
    texts = [split_front_matter(f.read_text(encoding="utf-8"))[1] for f in files]
    count_tokens, how = token_counter(args.tokenizer)
    total_chars = sum(len(t) for t in texts)
    total_tokens = sum(count_tokens(t) for t in texts)
    print(f"corpus: {len(files)} files, {total_chars} chars; tokens counted by {how}")
    print(f"corpus chars/token: {total_chars / total_tokens:.2f}")
    print(f"{'target':>6} {'overlap':>7} {'chunks':>6} {'mean ch':>7} {'mean tok':>8} {'p95 tok':>7} "
          f"{'max tok':>7} {'>256':>6}")  # fmt: skip
    for target, overlap in SETTINGS:
        chunks = [span.text for text in texts for span in chunk_text(text, target, overlap)]
        tokens = [count_tokens(c) for c in chunks]
        over = sum(t > MODEL_LIMIT for t in tokens) / len(tokens)
        print(
            f"{target:>6} {overlap:>7} {len(chunks):>6} {statistics.mean(len(c) for c in chunks):>7.0f} "
            f"{statistics.mean(tokens):>8.0f} {percentile(tokens, 0.95):>7} {max(tokens):>7} {over:>6.1%}"
        )


if __name__ == "__main__":
    main()
