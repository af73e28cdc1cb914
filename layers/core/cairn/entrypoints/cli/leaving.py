"""Ending `cairn serve` or `cairn mcp` while a handed-back job's handler still runs.

Such a handler runs on a daemon thread, and may be inside onnxruntime (an embedding run) or
faiss when the process ends. Python's exit leaves daemon threads where they stand, then the C
library's exit runs those libraries' teardown, which destroys their thread pools under the
running call: onnxruntime aborts the process ("terminate called without an active exception",
SIGABRT) after a clean stop had saved everything. So such a process ends without that teardown,
once logs and output are flushed. Nothing is lost by it: every write Cairn acknowledged is
already durable, and the handler's job was handed back to the queue.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import NoReturn


def leave(code: int) -> NoReturn:
    """End the process now with `code`, logs and standard streams flushed first."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
