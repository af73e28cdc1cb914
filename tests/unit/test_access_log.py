"""`cairn serve`'s access log names a request's query parameters but never their values: a
sign-in's code and state, or a key a client put in the query string."""

from __future__ import annotations

import logging

import pytest

from cairn.entrypoints.cli.access_log import QueryValues, install, without_values


@pytest.mark.parametrize(
    ("path", "logged"),
    [
        ("/healthz", "/healthz"),
        ("/ui/callback?code=e4cbV-tDEd&state=yd9Em", "/ui/callback?code=…&state=…"),
        ("/v1/brains?api_key=cairn_key_01abc_SECRET&limit=5", "/v1/brains?api_key=…&limit=…"),
        ("/x?flag&y=%2Fsecret", "/x?…=…&y=…"),  # a name without a value may be a token pasted bare
        ("/x?", "/x?"),
        ("/v1/brains?cairn_key_" + "a" * 26 + "_" + "S" * 43, "/v1/brains?…=…"),  # a key pasted bare
        ("/v1/brains?api_key;cairn_key_" + "a" * 26 + "_" + "S" * 43, "/v1/brains?…=…&…=…"),
        ("/v1/brains?QSTOK7", "/v1/brains?…=…"),
        ("/v1/brains?a=1;token=X", "/v1/brains?a=…&token=…"),
        (
            "/v1/brains/TOKSTATIC_aaaaaaaaaaaaaaaaa1Z/documents",
            "/v1/brains/…/documents",
        ),  # a token as a brain
        ("/v1/brains/eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", "/v1/brains/…"),  # a JWT
        ("/http%3A//u%3APASSWORD%40example.com/a", "/http%3A//…example.com/a"),
        ("/v1/brains;token=SECRET", "/v1/brains;…"),
        ("/v1/brains#token=SECRET", "/v1/brains#…"),
        (
            "/v1/brains/brn_01jabcdefghjkmnpqrstvwxyz0/documents",
            "/v1/brains/brn_01jabcdefghjkmnpqrstvwxyz0/documents",
        ),
        (
            "/v1/brains/team-notes-for-the-platform-group-2024",
            "/v1/brains/team-notes-for-the-platform-group-2024",
        ),
        ("/v1/brains?a-static-token-pasted-with-no-name-at-all", "/v1/brains?…=…"),
        (
            "/v1/admin/keys/cairn_key_" + "a" * 26 + "_" + "S" * 43,
            "/v1/admin/keys/cairn_key_" + "a" * 26 + "_…",
        ),
        (
            "/ui/keys/cairn_key_" + "b" * 26 + "_" + "S" * 43 + "/revoke",
            "/ui/keys/cairn_key_" + "b" * 26 + "_…/revoke",
        ),
    ],
)
def test_query_values_are_hidden(path: str, logged: str) -> None:
    assert without_values(path) == logged


def test_uvicorn_s_access_records_are_filtered(caplog: pytest.LogCaptureFixture) -> None:
    install()
    install()  # once is enough: a second call adds nothing
    logger = logging.getLogger("uvicorn.access")
    assert sum(isinstance(f, QueryValues) for f in logger.filters) == 1
    with caplog.at_level(logging.INFO, logger="uvicorn.access"):
        logger.info(
            '%s - "%s %s HTTP/%s" %d', "127.0.0.1:1", "GET", "/ui/callback?code=SECRETCODE", "1.1", 200
        )
    assert "SECRETCODE" not in caplog.text and "/ui/callback?code=…" in caplog.text
