"""`cairn` with the record store's wait for SQLite's writer lock cut to a fraction of a second, for
the tests that hold the lock from outside: `python -m tests.integration.cli.cairn_short_wait ARGS`."""

from __future__ import annotations

import sys

from cairn.adapters.local import sqlite_records
from cairn.entrypoints.cli import main

if __name__ == "__main__":
    sqlite_records.BUSY_TIMEOUT_S = 0.2
    sqlite_records.BEGIN_RETRY_S = 0.3
    sys.exit(main())
