"""A serving process logs through a plain handler (rich's, which the MCP SDK installs otherwise, opens a
file to log an exception and so fails, taking the event loop with it, when descriptors run out),
and runs with its descriptor limit raised to the hard one."""

from __future__ import annotations

import resource
import subprocess
import sys

PROBE = """
import logging, resource
from cairn.entrypoints.cli import process_limits
process_limits.prepare()
from mcp.server.mcpserver import MCPServer
MCPServer("probe", log_level="WARNING")  # configures the root logger when nothing else has
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
print([type(h).__name__ for h in logging.getLogger().handlers], soft == hard or soft >= 65536)
"""


def _low_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))


def test_the_root_logger_is_plain_and_the_descriptor_limit_raised() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, preexec_fn=_low_limit
    )
    assert done.stdout.strip() == "['StreamHandler'] True", done.stderr
