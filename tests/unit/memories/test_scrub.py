"""Credentials never reach a stored memory: each kind becomes a marker, the prose around it stays."""

from __future__ import annotations

import pytest

from cairn.domain.scrub import scrub

JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSIsImV4cCI6MX0.c2lnbmF0dXJlLXNpZ25hdHVyZQ"


@pytest.mark.parametrize(
    ("text", "secret", "marker"),
    [
        (f"the token was {JWT} yesterday", JWT, "[JWT_REDACTED]"),
        ("key AKIAIOSFODNN7EXAMPLE in the env", "AKIAIOSFODNN7EXAMPLE", "[AWS_KEY_REDACTED]"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "[AWS_SECRET_REDACTED]",
        ),
        (
            "db postgres://app:hunter2hunter2@db.internal:5432/app ok",
            "hunter2hunter2",
            "[CONNECTION_STRING_REDACTED]",
        ),
        (
            "endpoint http://awsuser:AwsEndpointPw77@127.0.0.1:9/ refused",
            "AwsEndpointPw77",
            "http://[CREDENTIALS_REDACTED]@127.0.0.1:9/",
        ),
        (
            "get https://b.s3.amazonaws.com/k?X-Amz-Expires=900&X-Amz-Signature=8445c1d5a7a84cd83ca3e171",
            "8445c1d5a7a84cd83ca3e171",
            "X-Amz-Signature=[AWS_SECRET_REDACTED]",
        ),
        (
            "fetch https://h.example/feed.xml?token=T0k3n&page=2",
            "T0k3n",
            "feed.xml?token=[SECRET_REDACTED]&page=2",
        ),
        (
            "curl -H 'Authorization: Bearer 8f3kQ2x9LmN0pR7sT1vW' https://api.example",
            "8f3kQ2x9LmN0pR7sT1vW",
            "Bearer [TOKEN_REDACTED]'",
        ),
        (
            "use sk-proj-abcdefghijklmnopqrstuvwx123 for it",
            "sk-proj-abcdefghijklmnopqrstuvwx123",
            "[API_KEY_REDACTED]",
        ),
        (
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789 pushed",
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "[API_KEY_REDACTED]",
        ),
        (  # a Cairn key's secret may hold `-`: none of it stays
            "key cairn_key_01m999frr80vtshm17aqf9qc1b_TSU8ciHIGZedY60IQJ3DU5NiPlxUgV8Zz9-Yy8_Xx7w, in",
            "-Yy8_Xx7w",
            "[API_KEY_REDACTED]",
        ),
        ('config: password="correct-horse-battery"', "correct-horse-battery", "[SECRET_REDACTED]"),
        ("API_KEY=zq81lmn0pp23xx91 set", "zq81lmn0pp23xx91", "[SECRET_REDACTED]"),
        (
            '{"ClientSecret": "1b4011d2f87e4059", "ClientName": "c"}',
            "1b4011d2f87e4059",
            '"ClientSecret": [SECRET_REDACTED]',
        ),
        ("{'password': 'correct-horse-battery'}", "correct-horse-battery", "'password': [SECRET_REDACTED]"),
        ("client_secret=q81lmn0pp23xx91z&x=1", "q81lmn0pp23xx91z", "client_secret=[SECRET_REDACTED]"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY----- after",
            "MIIEpAIBAAKCAQEA",
            "[PRIVATE_KEY_REDACTED]",
        ),
    ],
)
def test_each_kind_of_credential_becomes_its_marker(text: str, secret: str, marker: str) -> None:
    cleaned = scrub(text)
    assert secret not in cleaned and marker in cleaned


def test_plain_prose_is_left_alone() -> None:
    text = "Acme migrated to Next.js 14 in March 2026; the password policy needs 12 characters."
    assert scrub(text) == text
    assert scrub("the bearer of unquestionable news") == "the bearer of unquestionable news"
    assert scrub("key=value pairs, token=5, https://example.com/?q=token") == (
        "key=value pairs, token=5, https://example.com/?q=token"
    )
    assert scrub("the x-amz-security-token header carries it") == "the x-amz-security-token header carries it"
    urls = "see http://example.com:8080/a@b, clone ssh://git@example.com:22/repo, mail ops@example.com"
    assert scrub(urls) == urls
