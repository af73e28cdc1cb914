"""What a long-running Cairn process sets up before it serves: plain logging, scrubbed of credentials
(entrypoints/log_scrub.py), and its descriptor limit.

The MCP SDK gives the root logger rich's handler when nothing else has, and that handler imports
`rich.traceback` the first time it logs an exception: with every descriptor taken (connections held
open by a client that sends nothing), the import fails, the event loop's own error report fails
with it, and the loop stops while the process lives on, answering nobody. A plain stream handler
needs no file to log "too many open files", so the server keeps accepting once connections close;
the soft descriptor limit is raised to the hard one so it takes many more to get there."""

from __future__ import annotations

import contextlib
import logging
import sys

from cairn.entrypoints import log_scrub

FORMAT = "%(levelname)s %(name)s: %(message)s"


def prepare() -> None:
    log_scrub.install()  # no credential reaches the log (entrypoints/log_scrub.py)
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)
        root.setLevel(logging.WARNING)
    try:
        import resource
    except ImportError:  # not on this platform
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max(soft, 65536) if hard == resource.RLIM_INFINITY else hard
    with contextlib.suppress(ValueError, OSError):  # a limit the process may not raise: keep its own
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
