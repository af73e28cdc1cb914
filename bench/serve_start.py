"""`cairn serve`'s start on an empty store: time to the first `/healthz` 200, then each MCP surface's
first call after a short idle.

    .venv/bin/python bench/serve_start.py [--runs 5] [--idle 2] [--importtime] \
        [--python OTHER/.venv/bin/python]

Each run starts a new `cairn serve` on 127.0.0.1 (a free port, a new data directory) and polls
`/healthz` every 20 ms: it prints the wall clock from the process's start to the first 200 and the
process's CPU time (user + system, from /proc) at that moment. Then, `--idle` seconds later (2 by
default; 0: at once), it sends `tools/list` to each surface's path in the registry's order, one
after another, and times each, then a second `tools/list` on `/mcp`: a surface not yet built pays
for its build (the first one for the MCP SDK's import too) in that call, or for the rest of the
background build under way (entrypoints/mcp/warm_surfaces.py). `--importtime`: one more run under
`python -X importtime`, whose import total and heaviest top-level packages up to `/healthz` are
printed. `--python`: another checkout's interpreter (its `cairn` is the one started), to compare two
versions under the same load. Under PYTHONDONTWRITEBYTECODE=1 a checkout whose environment was never
compiled (`python -m compileall`) compiles every module at each start: ~1.5 s more CPU to `/healthz`.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SURFACE_PATHS = ("/mcp", "/mcp/admin", "/mcp/zengram", "/mcp/gbrain", "/mcp/mnemosyne", "/mcp/thoughtmcp")
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}
TICKS = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def tools_list(base: str, path: str) -> float:
    rpc = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).encode()
    request = urllib.request.Request(base + path, data=rpc, headers=HEADERS, method="POST")
    t = time.perf_counter()
    with urllib.request.urlopen(request, timeout=60) as answer:
        tools = json.loads(answer.read())["result"]["tools"]
    assert tools, path
    return (time.perf_counter() - t) * 1000


def one_run(python: str, importtime: bool, idle_s: float = 0.0) -> dict[str, Any]:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data, tempfile.TemporaryFile("w+") as err:
        argv = [python, *(["-X", "importtime"] if importtime else []), "-m", "cairn.entrypoints.cli"]
        argv += ["serve", "--host", "127.0.0.1", "--port", str(port), "--data-dir", data]
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL)
        try:
            while True:
                if proc.poll() is not None:
                    err.seek(0)
                    sys.exit(f"cairn serve ended: {err.read()[-2000:]}")
                try:
                    with urllib.request.urlopen(base + "/healthz", timeout=1) as answer:
                        if answer.status == 200:
                            break
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    pass
                time.sleep(0.02)
            row: dict[str, Any] = {"healthz_s": time.perf_counter() - t, "cpu_s": cpu_s(proc.pid)}
            if importtime:
                err.seek(0)
                row["imports"] = err.read()
                return row
            time.sleep(idle_s)
            for path in SURFACE_PATHS:
                row[path] = tools_list(base, path)
            row["/mcp again"] = tools_list(base, "/mcp")
            return row
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle", type=float, default=2.0, help="seconds from /healthz to the MCP calls")
    parser.add_argument("--importtime", action="store_true")
    parser.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    args = parser.parse_args()
    rows = [one_run(args.python, importtime=False, idle_s=args.idle) for _ in range(args.runs)]
    for i, row in enumerate(rows, 1):
        print(f"run {i}: healthz {row['healthz_s']:.2f} s (CPU {row['cpu_s']:.2f} s)")
    for key in ("healthz_s", "cpu_s"):
        values = [r[key] for r in rows]
        print(
            f"{key}: median {statistics.median(values):.2f}, best {min(values):.2f}, worst {max(values):.2f}"
        )
    print(f"first tools/list per surface, {args.idle:g} s after /healthz, ms (median / best / worst):")
    for path in (*SURFACE_PATHS, "/mcp again"):
        values = [r[path] for r in rows]
        print(f"  {path:<16} {statistics.median(values):7.1f} {min(values):7.1f} {max(values):7.1f}")
    if args.importtime:
        sys.path.insert(0, str(ROOT / "bench"))
        from lambda_cold_import import by_package, parse_importtime

        imports = parse_importtime(str(one_run(args.python, importtime=True)["imports"]))
        print(f"-X importtime up to /healthz: {sum(r[0] for r in imports) / 1000:.0f} ms of imports")
        for package, ms, count, via in by_package(imports)[:12]:
            print(f"  {package:<22} {ms:7.1f} ms  {count:4d} modules  (first via {via})")


if __name__ == "__main__":
    main()
