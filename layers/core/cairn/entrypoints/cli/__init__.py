"""The `cairn` command: serve, mcp (stdio), ingest, search, brains, collections, export, import,
compact, keys, check, erase. parser.py reads the arguments; each command lives in the module
named for it; common.py turns arguments into Settings and opens the store."""

from cairn.entrypoints.cli.parser import main

__all__ = ["main"]
