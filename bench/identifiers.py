"""Questions that name an identifier, in process on the embedded store: 300 incident notes that
read alike, written one after another in one folder (so each carries the previous one's excerpt
in its keyword context), each asked about by its bare id and in a question. Prints how often the
asked note comes first (docs/RELEVANCE.md, "A note that names the identifier asked about"):

    python bench/identifiers.py [--data-dir DIR] [--asked 60]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

from cairn.bootstrap import build_container
from cairn.config import Settings

SYSTEMS = [
    "payment gateway",
    "login service",
    "search cluster",
    "email relay",
    "billing database",
    "CDN edge",
]
CAUSES = [
    "an expired TLS certificate",
    "a full disk",
    "a bad deploy",
    "a DNS misconfiguration",
    "a memory leak",
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None, help="reuse a store (skips writing it)")
    parser.add_argument("--notes", type=int, default=300)
    parser.add_argument("--asked", type=int, default=60)
    args = parser.parse_args()
    data = args.data_dir or Path(tempfile.mkdtemp(prefix="cairn-identifiers-"))
    reuse = (data / "records.sqlite3").exists()
    container = build_container(Settings(data_dir=data))
    ids = [f"INC-{20000 + 7 * i}" for i in range(args.notes)]
    rng = random.Random(3)
    if reuse:
        brain = container.brains.get("incidents")
    else:
        brain = container.brains.create("Incidents", slug="incidents")
        for iid in ids:
            note = (
                f"# {iid}\n\nIncident {iid} took down the {rng.choice(SYSTEMS)} for {rng.randint(5, 90)} "
                f"minutes; the root cause was {rng.choice(CAUSES)}."
            )
            container.ingest.remember(brain, note, path=f"incidents/{iid}.md")
    asked = random.Random(7).sample(ids, args.asked)
    for form in ("{}", "What was the root cause of incident {}?"):
        first = sum(
            container.search.search(brain, form.format(i), top_k=3, count_access=False).hits[0].path
            == f"incidents/{i}.md"
            for i in asked
        )
        print(f"{form.format('<id>')!r}: the asked note first for {first} of {len(asked)}")
    print(f"data dir: {data}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
