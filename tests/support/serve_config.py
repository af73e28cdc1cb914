"""An app served as `cairn serve` serves it (its uvicorn settings: entrypoints/cli/serve.py
`server_config`) on a free 127.0.0.1 port, in a thread, until the test leaves the block."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cairn.config import Settings


@contextmanager
def served_as_cairn_serve(app: Any, settings: Settings) -> Iterator[int]:
    """The port the app answers on."""
    import uvicorn

    from cairn.entrypoints.cli.serve import server_config

    config = server_config(app, settings, "warning")
    config.host, config.port, config.lifespan = "127.0.0.1", 0, "off"
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield server.servers[0].sockets[0].getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
