"""Behind a proxy that ends TLS (CAIRN_PUBLIC_URL https), the web UI's cookies are `Secure` and
`__Host-` named although the last hop is plain HTTP from a host uvicorn does not take
X-Forwarded-Proto from (entrypoints/public_scheme.py)."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container

TOKEN = "ui-test-static-token-0123456789"


def test_an_https_public_url_makes_the_ui_cookies_secure_and_host_only(tmp_path: Path) -> None:
    container = fake_container(tmp_path, token=TOKEN, public_url="https://cairn.example.com")
    with TestClient(create_app(container), base_url="http://cairn.example.com") as t:
        form = t.get("/ui/sign-in")
        csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
        assert form.status_code == 200 and csrf is not None
        # a browser sends a Secure cookie back over the HTTPS the user sees; the test client's
        # jar would not over its http:// base, so the cookie goes back by hand
        given = "; ".join(c.split(";", 1)[0] for c in form.headers.get_list("set-cookie"))
        assert given.startswith("__Host-cairn_csrf=")
        t.cookies.clear()
        signed = t.post(
            "/ui/sign-in",
            data={"credential": TOKEN, "csrf": csrf.group(1), "next": "/ui"},
            headers={"cookie": given},
            follow_redirects=False,
        )

    cookies = signed.headers.get_list("set-cookie")
    assert signed.status_code == 303 and cookies, signed.text
    session = next(c for c in cookies if "cairn_ui=" in c)
    assert session.startswith("__Host-cairn_ui=") and "; secure" in session.lower()
    assert all(c.startswith("__Host-") and "; secure" in c.lower() for c in cookies)
