"""Cairn's long-running commands driven to their stop: `cairn mcp` spoken to line by line
(StdioSession), either command run through WRAPPED, which holds chosen fault points for a while
and turns a few knobs, so a stop with something running takes seconds."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from cairn.entrypoints.cli.clean_stop import STOP_WITHIN_S

WAIT_S = 60.0

# `cairn ARGS...` after three arguments: the stop's budget in seconds (`-`: as shipped); the
# fault points held, `POINT=SECONDS[@N]` (from the N-th time it is reached on), comma-separated;
# knobs, comma-separated (`-`: none): `sweep` has the index sweep tick every 0.2 s, settle intents
# at once and reach the point `reconcile` before each document it settles; `small` makes a brain
# of 20 chunks one with term postings and a maintenance worker, built 8 rows a step, the point
# `postings.step` reached before each step; `reads` has a search reach `access.saw` before it
# counts the reads of its hits; `asks` has memory_ask's retrieval (in a worker thread) reach
# `ask.retrieve` first; `graceful` gives `cairn serve`'s calls in flight one second, not
# fifteen, before its shutdown cancels them; `in-scale` gives them the share of the stop's budget
# they have as shipped (CALLS_IN_FLIGHT_S of STOP_WITHIN_S), for a budget scaled down;
# `audit-busy` has the record store refuse every audit entry as busy, as another process's long
# write would. A held point is said on stderr.
WRAPPED = """
import os, sys, time
from cairn import faults
from cairn.adapters.local import fts_health
from cairn.entrypoints.cli import main, serve
from cairn.services.documents import index_sweeper, index_sync

budget, held, knobs = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
if budget != "-":
    serve.STOP_WITHIN_S = float(budget)
points = {}
for spec in filter(None, held.split(",")):
    point, _, rest = spec.partition("=")
    seconds, _, first = rest.partition("@")
    points[point] = [float(seconds), int(first or 1), 0]
reached = faults.reached


def holding(point):
    found = points.get(point)
    if found is not None:
        found[2] += 1
        if found[2] >= found[1]:
            os.write(2, f"held {point}\\n".encode())
            time.sleep(found[0])
    reached(point)


faults.reached = holding
if "sweep" in knobs:
    made, reconcile = index_sweeper.IndexSweeper.__init__, index_sync.IndexSync.reconcile

    def at_once(self, documents, **options):
        made(self, documents, **{**options, "every_s": 0.2, "grace_s": 0.0})

    def held_reconcile(self, *args, **kwargs):
        holding("reconcile")
        return reconcile(self, *args, **kwargs)

    index_sweeper.IndexSweeper.__init__ = at_once
    index_sync.IndexSync.reconcile = held_reconcile
if "reads" in knobs:
    from cairn.services.search.access import AccessLog

    saw = AccessLog.saw

    def held_saw(self, *args):
        holding("access.saw")
        return saw(self, *args)

    AccessLog.saw = held_saw
if "small" in knobs:
    import threading
    from cairn.adapters.local import fts_postings, fts_search
    from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex

    fts_search.SMALL_TABLE = 20
    fts_postings.STEP = 8
    SqliteChunkIndex.__init__.__kwdefaults__["ann_min_rows"] = 20
    tokens = fts_postings.TOKENS

    class HeldSteps:
        def __getattr__(self, name):
            return getattr(tokens, name)

        def postings(self, *args):
            if threading.current_thread().name == "cairn-vector-maintenance":
                holding("postings.step")
            return tokens.postings(*args)

    fts_postings.TOKENS = HeldSteps()
if "asks" in knobs:
    from cairn.services.search.ask import AskService

    retrieve = AskService._retrieve

    def held_retrieve(self, *args):
        holding("ask.retrieve")
        return retrieve(self, *args)

    AskService._retrieve = held_retrieve
if "graceful" in knobs:
    serve.CALLS_IN_FLIGHT_S = 1
if "in-scale" in knobs:
    from cairn.entrypoints.cli import clean_stop

    serve.CALLS_IN_FLIGHT_S = serve.CALLS_IN_FLIGHT_S * serve.STOP_WITHIN_S / clean_stop.STOP_WITHIN_S
if "audit-busy" in knobs:
    from cairn.domain.errors import Unavailable
    from cairn.services import audit

    made_log = audit.AuditLog.__init__

    class Busy:
        def __init__(self, records):
            self.records = records

        def __getattr__(self, name):
            return getattr(self.records, name)

        def transact(self, ops):
            if any(op.item.pk.startswith(("audit#", "audit-brain#")) for op in ops):  # entries only
                raise Unavailable("the record store was kept busy (audit-busy)")
            return self.records.transact(ops)

    def busy_log(self, records, *args, **kwargs):
        made_log(self, Busy(records), *args, **kwargs)

    audit.AuditLog.__init__ = busy_log
sys.exit(main(sys.argv[4:]))
"""


def left_open(data: Path) -> list[str]:
    """The data directory's write-ahead logs: SQLite removes a file's as its last connection
    closes, so a stop that closed the stores leaves none."""
    return sorted(p.name for p in data.iterdir() if p.name.endswith("-wal"))


def wrapped(budget: str = "-", held: str = "", knobs: str = "-") -> list[str]:
    """The command that runs `cairn` through WRAPPED; its arguments follow."""
    return [sys.executable, "-c", WRAPPED, budget, held, knobs]


class StdioSession:
    """`cairn mcp` (`command`) driven line by line, stdin kept open until `end`; stderr to `log`."""

    def __init__(
        self, command: Sequence[str], log: Path, env: Mapping[str, str], *, client: str = "stopping"
    ) -> None:
        self.log = log
        with log.open("ab") as err:
            self.process = subprocess.Popen(
                list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, env=dict(env)
            )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, args=(self.process.stdout,), daemon=True).start()
        self.ids = 0
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        }
        self.request("initialize", hello)
        self.send({"method": "notifications/initialized"})

    def _pump(self, stream: IO[bytes] | None) -> None:
        assert stream is not None
        for line in stream:
            self.lines.put(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any], *, answered: bool = True) -> dict[str, Any]:
        """Send a request; its answer, or {} at once when not `answered` (left running)."""
        self.ids += 1
        self.send({"id": self.ids, "method": method, "params": params})
        while answered:
            answer: dict[str, Any] = json.loads(self.lines.get(timeout=WAIT_S))
            if answer.get("id") == self.ids:
                return answer
        return {}

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = self.request("tools/call", {"name": name, "arguments": arguments})
        assert not answer["result"].get("isError"), answer
        structured: dict[str, Any] = answer["result"]["structuredContent"]
        return structured

    def logged(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def wait_for(self, line: str, times: int = 1) -> None:
        deadline = time.monotonic() + WAIT_S
        while self.logged().count(line) < times:
            assert self.process.poll() is None, self.logged()[-3000:]
            assert time.monotonic() < deadline, f"never logged {line!r}: {self.logged()[-3000:]}"
            time.sleep(0.05)

    def end(self, how: str) -> float:
        """End the session (`eof`: stdin closed; else that signal's name); seconds until it exits."""
        ended = time.monotonic()
        if how == "eof":
            assert self.process.stdin is not None
            self.process.stdin.close()
        else:
            self.process.send_signal(getattr(signal, how))
        self.process.wait(timeout=STOP_WITHIN_S * 3)
        return time.monotonic() - ended

    def kill(self) -> None:
        """Kill it if it still runs (a test's end)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=WAIT_S)
