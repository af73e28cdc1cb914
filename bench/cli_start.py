"""What a short `cairn` command costs before it does anything: a fresh interpreter per run.

    .venv/bin/python bench/cli_start.py [--runs 5] [--python OTHER/.venv/bin/python ...]

For each interpreter (this checkout's by default; several are run interleaved, one run of each in
turn, so a load change touches them alike) and each of `cairn --help`, `--version`, `brains list`
and `keys list` (the last two on a store `brains create` made once in a fresh data directory), it
prints the median / best wall clock and CPU (user + system of the child) over the runs, then one
`-X importtime` run of each: the modules imported, Cairn's own among them, and the sum of their
import times. The process is `python -c "from cairn.entrypoints.cli import main; ..."`, what the
`cairn` script runs.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = (("--help",), ("--version",), ("brains", "list"), ("keys", "list"))
RUN = "import sys; from cairn.entrypoints.cli import main; sys.argv[0] = 'cairn'; sys.exit(main())"


def env_for(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
    env.update(CAIRN_DATA_DIR=str(data), PYTHONDONTWRITEBYTECODE="1", COLUMNS="100")
    return env


def run(python: str, args: tuple[str, ...], env: dict[str, str], *flags: str) -> tuple[float, float, str]:
    """Wall clock and CPU of one process, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [python, *flags, "-c", RUN, *args], env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{python} cairn {' '.join(args)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stderr


def import_profile(stderr: str) -> tuple[int, int, float]:
    """Modules imported, Cairn's own among them, and the sum of their self times (ms)."""
    rows = re.findall(r"^import time:\s+(\d+) \|\s+\d+ \| (\s*)(\S+)$", stderr, re.MULTILINE)
    own = sum(1 for _, _, name in rows if name == "cairn" or name.startswith("cairn."))
    return len(rows), own, sum(int(us) for us, _, _ in rows) / 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--python", action="append", default=None, help="interpreters to compare")
    opts = parser.parse_args()
    pythons: list[str] = opts.python or [sys.executable]
    with tempfile.TemporaryDirectory() as tmp:
        envs = {}
        for n, python in enumerate(pythons):
            envs[python] = env_for(Path(tmp) / f"data{n}")
            run(python, ("brains", "create", "Tea", "--slug", "tea"), envs[python])
        walls: dict[tuple[str, tuple[str, ...]], list[float]] = {}
        cpus: dict[tuple[str, tuple[str, ...]], list[float]] = {}
        for _ in range(opts.runs):
            for command in COMMANDS:
                for python in pythons:
                    wall, cpu, _ = run(python, command, envs[python])
                    walls.setdefault((python, command), []).append(wall)
                    cpus.setdefault((python, command), []).append(cpu)
        print(f"load average {os.getloadavg()[0]:.1f}; {opts.runs} runs; seconds, median / best")
        print(
            f"{'command':<20} {'python':<40} {'wall':>14} {'cpu':>14} "
            f"{'modules (cairn)':>16} {'import ms':>10}"
        )
        for command in COMMANDS:
            for python in pythons:
                w, c = walls[(python, command)], cpus[(python, command)]
                _, _, stderr = run(python, command, envs[python], "-X", "importtime")
                modules, own, ms = import_profile(stderr)
                print(
                    f"{' '.join(command):<20} {python[-40:]:<40} "
                    f"{statistics.median(w):6.2f} / {min(w):5.2f} "
                    f"{statistics.median(c):6.2f} / {min(c):5.2f} "
                    f"{modules:>9} ({own:>4}) {ms:>10.0f}"
                )


if __name__ == "__main__":
    main()
