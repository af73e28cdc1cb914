"""The access log without query values: a sign-in's `code` and `state` arrive in a query string,
and so does any credential a client puts there by mistake (`?api_key=…`). Each value is logged as
`…`, the names kept (they say which request it was); what in the path is shaped like a credential
is hidden too."""

from __future__ import annotations

import logging
import re
from urllib.parse import unquote_plus

HIDDEN = "…"


API_KEY = re.compile(r"(cairn_key_[0-9a-z]{26}_)[A-Za-z0-9_-]+")
"""An API key (auth/api_keys.py): its id is kept, its secret part hidden, wherever it stands."""


QUERY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
"""A query parameter's name as clients send them; anything else (a token pasted bare) is hidden too."""

SECRET_SHAPED = re.compile(
    r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_.-]*"  # a JWT
    r"|(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[a-z])(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{24,}"
    r"|[^/@]*(?:@|%40)"  # a URL's user and password, before its host
)
"""What in a path looks like a credential: a JWT, a run of 24 or more base64url characters of
mixed case with digits (a token: ids and slugs are lower case), a URL's user information."""


def without_values(path: str) -> str:
    """`path` with each query value replaced by HIDDEN, and so a query name that is not shaped
    like one (a key pasted as `?cairn_key_…`, `?api_key;…`) and an API key's secret in the path
    (`DELETE /v1/admin/keys/<the key, not its id>`)."""
    base, mark, query = path.partition("?")
    cut = re.search(r"[#;]", base)  # a fragment or path parameters: kept out whole
    tail = f"{cut.group()}{HIDDEN}" if cut else ""
    base = base[: cut.start()] if cut else base
    base = "/".join(_segment(s) for s in API_KEY.sub(rf"\g<1>{HIDDEN}", base).split("/")) + tail
    if not mark:
        return base
    names = [_name(pair) for pair in re.split(r"[&;]", query) if pair]
    return f"{base}?" + "&".join(f"{name}={HIDDEN}" for name in names) if names else base + "?"


def _name(pair: str) -> str:
    """A query pair's name as logged: HIDDEN unless it has a value and is shaped like a name."""
    raw, valued, _ = pair.partition("=")
    name = unquote_plus(raw)
    return name if valued and QUERY_NAME.fullmatch(name) and not API_KEY.search(name) else HIDDEN


def _segment(segment: str) -> str:
    return HIDDEN if SECRET_SHAPED.fullmatch(segment) else SECRET_SHAPED.sub(HIDDEN, segment)


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
