"""Every route of the web UI, fuzzed from its own declaration: the app's routes under /ui are walked
(a page added later is covered as it is), and each path, query and form parameter gets values drawn
by its declared type (a literal's choices, an int's bounds, a list of strings) or strings that have
broken parsers elsewhere, the ids and slugs that exist, and the form's CSRF token (mostly the right
one). Forms are also sent as bodies a browser would never send. Whatever arrives, the answer is the
UI's own: a status under 500, nothing logged as an error, and the brains page still renders. On both
shapes (SQLite and files; DynamoDB and S3 under moto with the fake OpenSearch cluster), open on
loopback as `cairn serve` runs without a credential.

CAIRN_FUZZ_EXAMPLES sets the examples per route (default 15) for a longer hunt."""

from __future__ import annotations

import tempfile
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from annotated_types import Ge, Le, MaxLen, MinLen
from fastapi.routing import APIRoute
from hypothesis import given
from hypothesis import strategies as st

from cairn.auth import access
from cairn.domain.models import MemoryType
from cairn.entrypoints.http import create_app
from cairn.services.memory.memory_model import MemoryInput
from tests.fakes.container import fake_container
from tests.support.app_routes import api_routes
from tests.support.fuzzing import EXAMPLES, ErrorLog, HttpWorld, errors_logged, fixed
from tests.support.schema_args import COMMON, NASTY
from tests.support.shapes import SHAPES, served

CSRF_COOKIE = "cairn_csrf"
SCOPES = ("documents:read", "documents:write", "admin", "nope")
BODIES = (
    (b'--x\r\nContent-Disposition: form-data; name="csrf"\r\n\r\nabc', "multipart/form-data; boundary=x"),
    (b"\xff\xfe=\x00&&=", "application/x-www-form-urlencoded"),
    (b"csrf=" + b"a" * 200_000, "application/x-www-form-urlencoded"),
    (b"{}", "application/json"),
    (b"", "multipart/form-data"),
)
"""Form bodies a browser would not send: a multipart without its end, bytes that are no text, a
field past its bound, JSON, a multipart without a boundary."""


@pytest.fixture(params=SHAPES)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[HttpWorld]:
    with served(request.param, request, tmp_path) as (container, client):
        brain = container.brains.create("Notes", slug="notes")
        with access.as_system():
            note = container.documents.write(brain, "notes/kettle.md", b"# Kettle\nIn the second cupboard.")
            fact = container.memories.store(
                brain, MemoryInput(type=MemoryType.fact, content="Ada leads payments.", key="lead")
            )
            job = container.consolidation.queue(brain)
            key = container.keys.create(name="fuzz", tenant="local", scopes=["documents:read"], brains=None)
        words = (
            brain.slug,
            brain.id,
            note.document.id,
            fact.memory.id,
            job.id,
            key.key.id,
            "notes/kettle.md",
        )
        yield HttpWorld(client, words)


def _strings(words: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.sampled_from(NASTY + COMMON + words + ("", "2025-06-01", "-1", "51")) | st.text(max_size=40)


def _value(field: Any, words: tuple[str, ...], csrf: str) -> st.SearchStrategy[Any]:
    if field.alias == "csrf":
        return st.just(csrf) | st.just(csrf) | _strings(words)
    annotation = field.field_info.annotation
    choices = typing.get_args(annotation) if typing.get_origin(annotation) is typing.Literal else ()
    if choices:
        return st.sampled_from(choices) | _strings(words)
    if annotation is int:
        bounds = [m for m in field.field_info.metadata if isinstance(m, Ge | Le)]
        low = next((m.ge for m in bounds if isinstance(m, Ge)), -5)
        high = next((m.le for m in bounds if isinstance(m, Le)), 10**6)
        return st.integers(int(low) - 1, int(high) + 1).map(str) | _strings(words)
    if typing.get_origin(annotation) is list:
        return st.lists(st.sampled_from(SCOPES) | _strings(words), max_size=3)
    lengths = [m for m in field.field_info.metadata if isinstance(m, MaxLen | MinLen)]
    longest = next((m.max_length for m in lengths if isinstance(m, MaxLen)), None)
    drawn = _strings(words)
    if longest is not None and longest <= 10_000:
        drawn |= st.sampled_from(("x" * longest, "é" * longest, "x" * (longest + 1)))
    return drawn


def _params(fields: list[Any], words: tuple[str, ...], csrf: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional={f.alias: _value(f, words, csrf) for f in fields})


def ui_routes() -> list[tuple[str, str, APIRoute]]:
    """(method, path, route) of every UI route; only the routes are read, so any container."""
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(fake_container(Path(tmp)))
    found = [
        (method, path, route)
        for path, route in api_routes(app.routes)
        if path.startswith("/ui")
        for method in route.methods
    ]
    return sorted(found, key=lambda r: r[:2])


@pytest.fixture
def errors() -> Iterator[ErrorLog]:
    with errors_logged() as log:
        yield log


def _fuzz(world: HttpWorld, routes: list[tuple[str, str, APIRoute]], errors: ErrorLog) -> None:
    t, words = world.client, world.words

    @fixed(EXAMPLES * len(routes))
    @given(st.data())
    def call(data: st.DataObject) -> None:
        method, template, route = data.draw(st.sampled_from(routes), label="route")
        csrf = t.cookies.get(CSRF_COOKIE) or ""
        if not csrf:  # signing out drops the cookie: a page gives it again
            t.get("/ui")
            csrf = t.cookies.get(CSRF_COOKIE) or ""
        path = template
        for field in route.dependant.path_params:
            value = data.draw(st.sampled_from(words) | _strings(words).filter(bool), label=field.alias)
            path = path.replace("{" + field.alias + "}", quote(value, safe=""))
        query = data.draw(_params(route.dependant.query_params, words, csrf), label="query")
        kwargs: dict[str, Any] = {"params": query, "follow_redirects": False}
        if method == "POST":
            if data.draw(st.integers(0, 9), label="raw body?") == 0:
                content, kind = data.draw(st.sampled_from(BODIES), label="raw body")
                kwargs |= {"content": content, "headers": {"content-type": kind}}
            else:
                kwargs["data"] = data.draw(_params(route.dependant.body_params, words, csrf), label="form")
        errors.seen.clear()
        response = t.request(method, path, **kwargs)
        shown = f"{method} {path} {kwargs!r:.400}: {response.status_code} {response.text[:300]}"
        assert response.status_code < 500, shown
        assert not errors.seen, f"{shown}: {errors.seen}"

    call()


def test_no_request_breaks_a_page(world: HttpWorld, errors: ErrorLog) -> None:
    routes = ui_routes()
    assert len(routes) > 20, routes
    _fuzz(world, routes, errors)
    page = world.client.get("/ui")  # still serving
    assert page.status_code == 200 and "<table" in page.text


@pytest.mark.parametrize("world", ["embedded"], indirect=True)
def test_a_page_that_fails_is_caught(
    world: HttpWorld, errors: ErrorLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*_: object, **__: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("cairn.entrypoints.ui.deps.UiDeps.brain", fail)
    routes = [r for r in ui_routes() if r[:2] == ("GET", "/ui/brains/{ref}")]
    with pytest.raises(Exception, match=": 500 "):
        _fuzz(world, routes, errors)
