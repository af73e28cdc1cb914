"""What the reranker adapters share: a service's results checked and turned into `Ranked`, and a
service's own words kept only when they do not quote the input.

Services echo input in their errors (a validation message citing the offending value, a proxy
returning the request body): an error must not carry a query or a document out to logs and
callers, so a message that shares a run of `_WINDOW` characters with any input text, or contains
a short input text whole, is replaced by the service's status alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from cairn.domain.text import holds_secret
from cairn.ports.reranker import Ranked, RerankError

_WINDOW = 16
_SHORT_TEXT = 4  # input texts shorter than this match too much ordinary wording to be checked
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_DETAIL_CHARS = 200


def results_wanted(top_n: int | None, count: int) -> int:
    """How many results a call asks for: all `count` documents, or top_n of them."""
    if top_n is None:
        return count
    if isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
        raise ValueError(f"top_n must be a positive integer, not {top_n!r}")
    return min(top_n, count)


def ranked(
    items: object, count: int, *, where: str, score_keys: Sequence[str], offset: int = 0
) -> list[Ranked]:
    """A service's results (objects with an index into the `count` documents sent and a score under
    one of `score_keys`), checked, as `Ranked` shifted by `offset`, best first.

    Raises RerankError(rerank_bad_response) for anything but a list of such objects with distinct
    indexes in range and finite scores."""
    if not isinstance(items, list):
        raise _bad(where, "a reply without a list of results")
    out: list[Ranked] = []
    seen: set[int] = set()
    for item in items:
        if not isinstance(item, dict):
            raise _bad(where, "a result that is not an object")
        index = item.get("index")
        if isinstance(index, bool) or not isinstance(index, int):
            raise _bad(where, "a result without an integer index")
        if not 0 <= index < count:
            raise _bad(where, f"a result for index {index}, but {count} documents were sent")
        if index in seen:
            raise _bad(where, f"two results for index {index}")
        seen.add(index)
        out.append(Ranked(index + offset, _score(item, score_keys, where)))
    return best(out)


def best(results: Iterable[Ranked], limit: int | None = None) -> list[Ranked]:
    """Best first, ties in input order, at most `limit`."""
    ordered = sorted(results, key=lambda r: (-r.score, r.index))
    return ordered if limit is None else ordered[:limit]


def _score(item: dict[str, Any], keys: Sequence[str], where: str) -> float:
    for key in keys:
        value = item.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise _bad(where, f"a result whose {key} is not a finite number")
        return float(value)
    raise _bad(where, f"a result without {' or '.join(keys)}")


def _bad(where: str, what: str) -> RerankError:
    return RerankError("rerank_bad_response", f"{where} sent {what}", retryable=False)


def safe_detail(words: str, inputs: Sequence[str], secrets: Sequence[str] = ()) -> str:
    """The service's own words about a failure, fit for an error message: one line, short, quoted
    values dropped, "" when they still quote any of `inputs` (the query, the documents), and no
    secret in them."""
    text = " ".join(words.split())
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    if holds_secret(text, secrets):  # a part of one, or one in another case: say nothing of it
        return ""
    text = _QUOTED.sub("'…'", text)[:_DETAIL_CHARS]
    return "" if quotes_input(text, inputs) else text


def quotes_input(text: str, inputs: Sequence[str]) -> bool:
    """Whether `text` shares a run of _WINDOW characters with any input, or holds a short one whole."""
    if not text:
        return False
    folded = " ".join(text.split())
    windows = {folded[i : i + _WINDOW] for i in range(max(1, len(folded) - _WINDOW + 1))}
    for source in inputs:
        flat = " ".join(source.split())
        if len(flat) < _SHORT_TEXT:
            continue
        if len(flat) <= _WINDOW:
            if flat in folded:
                return True
        elif any(window in flat for window in windows if len(window) == _WINDOW):
            return True
    return False
