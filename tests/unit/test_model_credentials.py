"""A model server's URL holding a user and password, with an API key set for it too, is refused at
start-up: httpx sends the URL's user and password as Basic credentials in the Authorization header,
which replaced the key's Bearer token, so the configured key was silently never sent."""

from __future__ import annotations

import argparse

import pytest

from cairn.config import Settings
from cairn.domain.errors import InvalidInput
from cairn.entrypoints.cli.common import settings_from

KEY = "sk-test-4f1c9a7e2b"


@pytest.mark.parametrize("server", ["generator", "reranker"])
def test_a_url_with_a_user_and_password_and_a_key_is_refused_without_either(
    server: str, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv(f"CAIRN_{server.upper()}_BASE_URL", "https://alice:pa55word@models.example/v1")
    monkeypatch.setenv(f"CAIRN_{server.upper()}_API_KEY", KEY)
    with pytest.raises(InvalidInput) as refused:
        settings_from(argparse.Namespace(data_dir=tmp_path))
    message = refused.value.message
    assert f"CAIRN_{server.upper()}_BASE_URL holds a user and password" in message
    assert KEY not in message and "pa55word" not in message and "alice" not in message


@pytest.mark.parametrize(
    ("url", "key"),
    [
        ("https://alice:pa55word@models.example/v1", None),  # Basic alone: sent as it is
        ("https://models.example/v1", KEY),  # the key alone
        ("https://@models.example/v1", KEY),  # an empty user part carries nothing
        ("http://[::1/v1", KEY),  # not a URL: the adapter names it when used
    ],
)
def test_one_credential_or_none_is_taken(url: str, key: str | None) -> None:
    settings = Settings(generator_base_url=url, generator_api_key=key, reranker_base_url=url)
    assert settings.generator_base_url == url
