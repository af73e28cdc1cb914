"""The access log without query values: a sign-in's `code` and `state` arrive in a query string,
and so does any credential a client puts there by mistake (`?api_key=…`). Each value is logged as
`…`, the names kept (they say which request it was)."""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl

HIDDEN = "…"


def without_values(path: str) -> str:
    """`path` with each query value replaced by HIDDEN."""
    base, mark, query = path.partition("?")
    if not mark:
        return path
    names = [name for name, _ in parse_qsl(query, keep_blank_values=True)]
    return f"{base}?" + "&".join(f"{name}={HIDDEN}" for name in names) if names else base + "?"


class QueryValues(logging.Filter):
    """On uvicorn's access logger: its records' third argument is the request's path and query."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], without_values(args[2]), *args[3:])
        return True


def install() -> None:
    logger = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, QueryValues) for f in logger.filters):
        logger.addFilter(QueryValues())
