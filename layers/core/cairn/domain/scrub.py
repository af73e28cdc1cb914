"""Credentials taken out of text before it is stored as a memory, out of every log line a Cairn
process writes (entrypoints/log_scrub.py) and out of a failed job's error (job_outcomes.py).

Agents paste logs, configs and commands into memories; a stored secret would be searchable by
every reader of the brain and copied into exports. Each kind of credential is replaced by a
marker naming its kind, so the memory still says what was there.
"""

from __future__ import annotations

import re

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
        "[PRIVATE_KEY_REDACTED]",
    ),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), "[JWT_REDACTED]"),
    (
        re.compile(
            r"\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|redis|rediss|amqps?|mssql|sqlserver)"
            r"://[^\s:/@]+:[^\s@]+@[^\s]+",
            re.I,
        ),
        "[CONNECTION_STRING_REDACTED]",
    ),
    (  # any other URL's user and password (an endpoint setting's, quoted by the error reaching it)
        re.compile(r"\b([a-z][a-z0-9+.-]{1,20}://)[^\s:/@]+:[^\s@/]+@", re.I),
        r"\1[CREDENTIALS_REDACTED]@",
    ),
    (  # an Authorization header's token (`curl -H 'Authorization: Bearer …'` pasted, a headers dict)
        re.compile(r"(?i)\b(bearer\s+)(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{16,}=*"),
        r"\1[TOKEN_REDACTED]",
    ),
    (  # a key in a URL's query, of any length (httpx's INFO line quotes each request's URL)
        re.compile(r"(?i)([?&](?:key|token|api-?key|sig|signature)=)[^&\s\"'#<>]+"),
        r"\1[SECRET_REDACTED]",
    ),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "[AWS_KEY_REDACTED]"),
    (
        re.compile(r"(?i)\b(aws_secret_access_key\s*[=:]\s*)[\"']?[A-Za-z0-9/+=]{40}[\"']?"),
        r"\1[AWS_SECRET_REDACTED]",
    ),
    (  # a session token (botocore's debug lines sign and send it) and a presigned URL's signature
        re.compile(
            r"(?i)\b(x-amz-(?:security-token|signature)[\"']?\s*[:=]\s*b?[\"']?)[A-Za-z0-9/+=%_-]{16,}"
        ),
        r"\1[AWS_SECRET_REDACTED]",
    ),
    (
        re.compile(
            r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
            r"|xox[abprs]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35}"
            # a Cairn key's secret is base64url: its `-` may come anywhere in it
            r"|cairn_[A-Za-z0-9_]{20,}[A-Za-z0-9_-]*)"
        ),
        "[API_KEY_REDACTED]",
    ),
    (
        re.compile(
            r"(?i)\b((?:api[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|session[_-]?token"
            r"|client[_-]?secret|secret[_-]?(?:string|binary)|secret|password|passwd|pwd)"
            # a JSON or Python field too (`"ClientSecret": "…"`: botocore's debug lines print bodies)
            r"[\"']?\s*[=:]\s*b?)[\"']?[^\s\"',;]{8,}[\"']?"
        ),
        r"\1[SECRET_REDACTED]",
    ),
)


def scrub(text: str) -> str:
    """`text` with every credential it recognises replaced by a `[..._REDACTED]` marker."""
    for pattern, marker in _RULES:
        text = pattern.sub(marker, text)
    return text
