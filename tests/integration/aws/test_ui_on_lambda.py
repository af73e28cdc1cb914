"""The web UI through the API function as API Gateway invokes it: its stylesheet and sign-in page
without a credential, a redirect to sign in for everything else, and the pages for a verified
caller (the gateway's JWT claims), who sees only its own tenant's brains."""

from __future__ import annotations

from pathlib import Path

from cairn.entrypoints.aws_lambda import api_handler
from tests.events.apigw import LambdaContext, body_of, http_event
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
