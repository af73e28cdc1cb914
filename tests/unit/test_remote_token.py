"""`cairn ingest --server` and `cairn import --server` send the token as a header: one read from a
file keeps its line break, which is dropped; one that no header can carry is refused in one line
that quotes none of it (httpx's own refusal quotes the whole header)."""

from __future__ import annotations

import pytest

from cairn.domain.errors import InvalidInput
from cairn.entrypoints.cli.remote import RemoteStore

SECRET = "cairn_key_01m90s1vq9abcdefghijklmnop_Hx4Y5aQkrx2aTVspTl4gEW4Kwi5rtcC"


def test_a_token_read_with_its_line_break_is_sent_without_it() -> None:
    store = RemoteStore("http://cairn.test", SECRET + "\r\n")
    assert store.http.headers["authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize("bad", [SECRET + " x", SECRET[:20] + "\n" + SECRET[20:], SECRET + "\u201d"])
def test_a_token_no_header_can_carry_is_refused_without_quoting_it(bad: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        RemoteStore("http://cairn.test", bad)
    assert "printable ASCII" in refused.value.message
    assert not any(SECRET[i : i + 8] in refused.value.message for i in range(len(SECRET) - 7))
