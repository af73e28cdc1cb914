"""The web UI through the API function as API Gateway invokes it: its stylesheet and sign-in page
without a credential, a redirect to sign in for everything else, and the pages for a verified
caller (the gateway's JWT claims), who sees only its own tenant's brains."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from cairn.entrypoints.aws_lambda import api_handler
from tests.events.apigw import LambdaContext, body_of, http_event, json_of
from tests.fakes.container import fake_container


def test_the_ui_behind_the_api_function(tmp_path: Path) -> None:
    h = api_handler(lambda: fake_container(tmp_path, backend="aws", jwt_default_tenant="dev"))
    style = h(http_event("GET", "/ui/static/cairn.css", anonymous=True), LambdaContext())
    sign_in = h(http_event("GET", "/ui/sign-in", anonymous=True), LambdaContext())
    refused = h(http_event("GET", "/ui", anonymous=True), LambdaContext())
    assert style["statusCode"] == 200 and b"--accent" in body_of(style)
    assert sign_in["statusCode"] == 200 and b'name="credential"' in body_of(sign_in)
    assert refused["statusCode"] == 303 and refused["headers"]["location"].startswith("/ui/sign-in")

    created = h(http_event("POST", "/v1/brains", body={"name": "Ops", "slug": "ops"}), LambdaContext())
    assert created["statusCode"] == 201, body_of(created)
    page = h(http_event("GET", "/ui"), LambdaContext())
    assert page["statusCode"] == 200 and b"/ui/brains/ops" in body_of(page)
    assert b'href="/docs"' not in body_of(page)  # API Gateway serves no /docs
    other = {"sub": "someone-else", "tenant": "partner", "scope": "documents:read"}
    stranger = h(http_event("GET", "/ui", claims=other), LambdaContext())
    assert stranger["statusCode"] == 200 and b"/ui/brains/ops" not in body_of(stranger)


def _cookie(response: dict[str, Any], name: str) -> str:
    found = [c for c in response.get("cookies", []) if c.startswith(f"{name}=")]
    assert found, response
    assert {"secure", "httponly", "path=/"} <= {part.strip().lower() for part in found[0].split(";")}
    return found[0].split(";")[0].split("=", 1)[1]


def _form_csrf(response: dict[str, Any]) -> str:
    found = re.search(rb'name="csrf" value="([^"]+)"', body_of(response))
    assert found, body_of(response)
    return found.group(1).decode()


def test_a_key_signs_in_to_the_ui_on_lambda_and_signing_out_ends_the_session(tmp_path: Path) -> None:
    """API Gateway hands the browser's cookies over in the event's `cookies` list, and takes the
    ones to set from the answer's: a session the server keeps, never the key, in between."""
    h = api_handler(lambda: fake_container(tmp_path, backend="aws", jwt_default_tenant="dev"))
    ops = http_event("POST", "/v1/brains", body={"name": "Ops", "slug": "ops", "visibility": "tenant"})
    assert h(ops, LambdaContext())["statusCode"] == 201
    made = h(
        http_event("POST", "/v1/admin/keys", body={"name": "laptop", "scopes": ["documents:read"]}),
        LambdaContext(),
    )
    key = json_of(made)["key"]

    def browser(
        method: str, path: str, cookies: list[str], form: dict[str, str] | None = None
    ) -> dict[str, Any]:
        headers = {"content-type": "application/x-www-form-urlencoded"} if form is not None else {}
        event = http_event(
            method, path, anonymous=True, headers=headers, body=urlencode(form) if form else None
        )
        event["cookies"] = cookies
        return h(event, LambdaContext())

    # Over HTTPS every UI cookie is `__Host-` named: a sibling subdomain cannot plant one.
    form = browser("GET", "/ui/sign-in", [])
    csrf_cookie = f"__Host-cairn_csrf={_cookie(form, '__Host-cairn_csrf')}"
    signed = browser(
        "POST", "/ui/sign-in", [csrf_cookie], {"credential": key, "csrf": _form_csrf(form), "next": "/ui"}
    )
    assert signed["statusCode"] == 303, body_of(signed)
    session = _cookie(signed, "__Host-cairn_ui")
    assert session and key not in session

    page = browser("GET", "/ui", [f"__Host-cairn_ui={session}"])
    assert page["statusCode"] == 200 and b"/ui/brains/ops" in body_of(page)
    # The same session under the unprefixed name (a cookie any sibling host could set) is not read.
    tossed = browser("GET", "/ui", [f"cairn_ui={session}"])
    assert tossed["statusCode"] == 303 and tossed["headers"]["location"].startswith("/ui/sign-in")
    out = browser("POST", "/ui/sign-out", [f"__Host-cairn_ui={session}"], {"csrf": _form_csrf(page)})
    assert out["statusCode"] == 303
    assert any(c.startswith('__Host-cairn_ui=""') and "secure" in c.lower() for c in out["cookies"])
    again = browser("GET", "/ui", [f"__Host-cairn_ui={session}"])
    assert again["statusCode"] == 303 and again["headers"]["location"].startswith("/ui/sign-in")
