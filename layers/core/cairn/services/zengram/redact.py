"""Credentials written as `name=value` or `name: value`, taken out of what zengram stores.

The core's scrub (domain/scrub.py) recognises credentials by their form, and a named secret only
when its value has 8 or more characters, so `password=hunter2` would be stored as written. zengram
promises that credentials never reach a memory, whatever their length, so here any value given to
a credential's name is replaced by the same `[SECRET_REDACTED]` marker, the name kept:

- `name=value` (a config line, an env var, a query string): any value;
- `name: value` (YAML, prose): a quoted value, or one with letters and digits together, or with a
  symbol a word does not have (`p@ss`, `s3cr3t`, `"x"`). A plain word or number after a colon
  (`Password: see the vault`, `token: 42 of them`) is prose and stays.

The name is a credential's word (password, passwd, pwd, pass, secret, token, api key, access key,
private key, credential), alone or at the end of a compound (`db_password`, `GITHUB_TOKEN`,
`client-secret`); a longer word that merely contains one (`tokenizer`, `bypass`, `max_tokens`) is
not a name.
"""

from __future__ import annotations

import re
from typing import Any

from cairn.domain.scrub import scrub

MARKER = "[SECRET_REDACTED]"
_NAME = (
    r"(?<![\w-])(?:[A-Za-z0-9]+[_-])*"
    r"(?:password|passwd|pwd|pass|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|credentials?)"
    r"(?![\w-])"
)
_DONE = r"(?!\[[A-Z_]+_REDACTED\])"  # a marker already there stays as it is
_QUOTED = r"\"[^\"\n]+\"|'[^'\n]+'"
_CHAR = r"[^\s\"',;&)]"  # what a value is made of: up to a space, a quote or a separator
_ASSIGNED = re.compile(rf"(?i)({_NAME}\s*=(?!=)\s*){_DONE}(?:{_QUOTED}|{_CHAR}+)")
_CODED = (
    rf"(?={_CHAR}*[A-Za-z])(?={_CHAR}*[0-9]){_CHAR}+"  # letters and digits together
    rf"|{_CHAR}*[@#$%^*+=~_|\\]{_CHAR}*"  # a symbol words do not have
)
_LABELLED = re.compile(rf"(?i)({_NAME}\s*:\s*){_DONE}(?:{_QUOTED}|{_CODED})(?!{_CHAR})")


def redact(text: str) -> str:
    """`text` with every named credential's value replaced by MARKER (module docstring)."""
    text = _ASSIGNED.sub(rf"\1{MARKER}", text)
    return _LABELLED.sub(rf"\1{MARKER}", text)


def redact_all(value: Any) -> Any:
    """Every string in a JSON value (metadata) with credentials taken out, as memory text is:
    the core's scrub, then named credentials of any length."""
    if isinstance(value, str):
        return redact(scrub(value))
    if isinstance(value, dict):
        return {key: redact_all(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_all(item) for item in value]
    return value
