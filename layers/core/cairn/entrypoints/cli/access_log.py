"""The access log without query values: a sign-in's `code` and `state` arrive in a query string,
and so does any credential a client puts there by mistake (`?api_key=…`). Each value is logged as
`…`, the names kept (they say which request it was)."""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qsl

HIDDEN = "…"


API_KEY = re.compile(r"(cairn_key_[0-9a-z]{26}_)[A-Za-z0-9_-]+")
"""An API key (auth/api_keys.py): its id is kept, its secret part hidden, wherever it stands."""


QUERY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
"""A query parameter's name as clients send them; anything else (a token pasted bare) is hidden too."""


def without_values(path: str) -> str:
    """`path` with each query value replaced by HIDDEN, and so a query name that is not shaped
    like one (a key pasted as `?cairn_key_…`, `?api_key;…`) and an API key's secret in the path
    (`DELETE /v1/admin/keys/<the key, not its id>`)."""
    base, mark, query = path.partition("?")
    base = API_KEY.sub(rf"\g<1>{HIDDEN}", base)
    if not mark:
        return base
    names = [
        name if QUERY_NAME.fullmatch(name) and not API_KEY.search(name) else HIDDEN
        for name, _ in parse_qsl(query, keep_blank_values=True)
    ]
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
