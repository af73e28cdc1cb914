"""`cairn ingest --server URL`: upload files to a running Cairn over its REST API.

A server that is busy answers 429 (its rate limit) or 503 with `Retry-After`; the uploader waits
that long and sends the request again, up to a total wait, instead of failing the file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from cairn.domain.errors import CairnError, InvalidInput, NoBrain
from cairn.domain.text import checked_credential
from cairn.retry_after import parse_retry_after

RETRYABLE = (429, 503)


class RemoteError(CairnError):
    """The server refused a request; `code` and message are its Problem+JSON's."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def retry_after_s(value: str | None, default: float = 1.0) -> float:
    """Seconds from a Retry-After header (cairn/retry_after.py); `default` when it says none."""
    seconds = parse_retry_after(value)
    return default if seconds is None else seconds


class RemoteStore:
    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        max_wait_s: float = 120.0,
        client: httpx.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if token:
            try:
                token = checked_credential(token, "the token (--token, CAIRN_TOKEN)")
            except ValueError as exc:
                raise InvalidInput(str(exc)) from None
        headers = {"authorization": f"Bearer {token}"} if token else {}
        self.http = client or httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=300.0)
        self.max_wait_s = max_wait_s
        self.sleep = sleep
        self.waited_s = 0.0
        """Seconds spent honouring Retry-After so far (the progress line reports it)."""

    def brain(self, ref: str | None, *, create: bool) -> dict[str, Any]:
        """The brain `ref` names (created when asked), or the server's first brain, or `default`."""
        if ref is not None:
            response = self.send("GET", f"/v1/brains/{quote(ref, safe='')}")
            if response.status_code == 404 and create:
                return self.json(self.send("POST", "/v1/brains", json={"name": ref, "slug": ref}))
            if response.status_code == 404:
                raise NoBrain(
                    f"no brain {ref!r} on the server: create it with `cairn brains create {ref}` "
                    "(or pass --create)"
                )
            return self.json(response)
        brains = self.json(self.send("GET", "/v1/brains"))["items"]
        if brains:
            return dict(brains[0])
        return self.json(self.send("POST", "/v1/brains", json={"name": "default", "slug": "default"}))

    def upload(self, brain_id: str, file: Path, target: str) -> dict[str, Any]:
        data = file.read_bytes()
        url = f"/v1/brains/{quote(brain_id, safe='')}/documents/ingest/file"
        response = self.send("POST", url, files={"file": (file.name, data)}, data={"path": target})
        return self.json(response)

    def send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        while True:
            response = self.http.request(method, url, **kwargs)
            if response.status_code not in RETRYABLE:
                return response
            wait = retry_after_s(response.headers.get("retry-after"))
            if self.waited_s + wait > self.max_wait_s:
                return response
            self.waited_s += wait
            self.sleep(wait)

    @staticmethod
    def json(response: httpx.Response) -> dict[str, Any]:
        try:
            body = response.json()
        except ValueError:
            body = {}
        if response.is_success and isinstance(body, dict):
            return body
        code = body.get("code", f"http_{response.status_code}") if isinstance(body, dict) else "error"
        detail = body.get("detail") if isinstance(body, dict) else None
        raise RemoteError(str(code), str(detail or response.reason_phrase))
