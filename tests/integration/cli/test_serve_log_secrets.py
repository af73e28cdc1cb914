"""`cairn serve`'s log names no credential a request sent, and still writes each request's access
line: a key in the query string or the path, with a request's exception in flight as it is logged."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.support.processes import start

KEY = "cairn_key_" + "0" * 26 + "_TSU8ciHIGZedY60IQJ3DU5NiPlxUgV8Zz9-Yy8_Xx7w"  # as api_keys.py makes them


def test_a_key_sent_in_a_request_reaches_neither_the_access_log_nor_stderr(tmp_path: Path) -> None:
    server = start(tmp_path / "data")
    try:
        answers = [
            httpx.get(f"{server.base}/v1/brains", params={"key": KEY}, timeout=30).status_code,
            httpx.get(f"{server.base}/mcp", params={"api_key": KEY}, timeout=30).status_code,
            # refused by validation: its exception, quoting the key, is in flight as the line is logged
            httpx.delete(f"{server.base}/v1/admin/keys/{KEY}", timeout=30).status_code,
        ]
    finally:
        server.stop()
    log = (tmp_path / f"serve-{server.base.rsplit(':', 1)[1]}.log").read_text()
    assert answers[0] == 200 and answers[2] == 400
    assert KEY[:30] not in log and "Yy8_Xx7w" not in log and "Logging error" not in log
    assert '"GET /v1/brains?key=… HTTP/1.1" 200' in log and '"GET /mcp?api_key=… HTTP/1.1"' in log
    assert '"DELETE /v1/admin/keys/[API_KEY_REDACTED] HTTP/1.1" 400' in log
