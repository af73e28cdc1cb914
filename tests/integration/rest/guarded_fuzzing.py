"""What the guarded schemathesis runs share (test_openapi_fuzz_guarded.py on the embedded store,
test_openapi_fuzz_guarded_aws.py on the AWS adapters): the world they seed, how each example is sent
and aimed, the caller's check, and what must hold when a run ends. A `Guard` holds one module's
world and its own schema, on which it aims each case; its module parametrizes a test with the
schema and sends each case through `send`."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from hypothesis import strategies as st

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from cairn.bootstrap import Container
from cairn.domain.models import Brain
from cairn.entrypoints.http import create_app
from cairn.entrypoints.rest.authz import ROUTE_SCOPES
from tests.integration.rest.live import serve
from tests.integration.rest.openapi_fuzzing import CHECKS, DOCUMENT, OPERATIONS
from tests.integration.rest.openapi_fuzzing import schema as fuzzed_schema

TOKEN = "guarded-fuzz-static-token-0123456789"
OWNER = Principal("local", "owner", frozenset({READ, WRITE, ADMIN}), Via.static_token)
PUBLIC_PATHS = {"/healthz", "/.well-known/oauth-protected-resource"}
DOC = "memory/global/vault.md"
SECRET = "The vault code is 4471 and only they know it."
CALLERS = ("limited", "limited", "reader", "none", "bad")  # the limited key has the most to try
BAD = (TOKEN + "x", "cairn_key_" + "A" * 43, "a.b.c")
SETTINGS: dict[str, Any] = {"token": TOKEN, "rate_limit_per_s": 0, "auth_failures_per_min": 0}
"""What the container is built with: a static token, and no rate limit to end the run early: not
per caller, nor on the refused credentials of the one address every caller here sends from (that
one is tested in tests/integration/auth/test_failed_sign_ins.py)."""


@dataclass
class World:
    mine: Brain
    theirs: Brain
    credentials: dict[str, str]
    aims: dict[str, list[str]]
    """Values tried for a path or query parameter of that name, beside the generated one."""
    archive: str
    """Their brain's archive, with its document changed: what a restore into it would write."""
    requests: int = 0
    answered: Counter[tuple[str, int]] = field(default_factory=Counter)
    """Answers by caller and status class (2 for 2xx...)."""


def _snapshot(c: Container, brain: Brain) -> dict[str, Any]:
    with access.acting_as(OWNER, ADMIN):
        now = c.brains.get(brain.id)
        files = c.documents.list(now, recursive=True, include_generated=True)
        return {
            "brain": now.model_dump(exclude={"updated_at"}),
            "documents": {f.path: c.documents.read(now, f.path) for f in files},
            "brains": sorted(b.id for b in c.brains.list()),
            "keys": sorted(k.id for k in c.keys.list()),
        }


def _seed(c: Container) -> World:
    with access.acting_as(OWNER, ADMIN):
        mine = c.brains.create("Mine", slug="mine", visibility="tenant")
        theirs = c.brains.create("Theirs", slug="theirs", visibility="tenant")
        c.documents.write(mine, DOC, b"# Vault\nThe kettle is in the second cupboard.")
        c.documents.write(theirs, DOC, f"# Vault\n{SECRET}".encode())
        sessions = [c.sessions.create(b, title="chat").id for b in (mine, theirs)]
        jobs = [c.consolidation.queue(b).id for b in (mine, theirs)]
        records = list(c.archive.export(theirs))
    for record in records:
        if record.get("path") == DOC:
            record["content"] = "# Vault\nOverwritten by whoever restored this."
    admin = c.keys.create(name="admin", tenant="local", scopes=[READ, WRITE, ADMIN])
    limited = c.keys.create(name="limited", tenant="local", scopes=[READ, WRITE], brains=[mine.id])
    reader = c.keys.create(name="reader", tenant="local", scopes=[READ])
    return World(
        mine=mine,
        theirs=theirs,
        credentials={"limited": limited.plaintext, "reader": reader.plaintext},
        aims={
            "brainId": ["mine", "theirs", mine.id, theirs.id],
            "brain": ["mine", "theirs", theirs.id],
            "sessionId": sessions,
            "jobId": jobs,
            "keyId": [admin.key.id, limited.key.id],
            "path": [DOC],
        },
        archive="\n".join(json.dumps(r) for r in records) + "\n",
    )


class Guard:
    """One module's run: `running` seeds a container and serves it, `send` sends a case."""

    def __init__(self) -> None:
        self._world: World | None = None
        self.schema = fuzzed_schema()

        def flatmap_case(context: Any, case: Any) -> Any:  # schemathesis knows a hook by its name
            drawn = st.tuples(
                st.sampled_from(CALLERS), st.sampled_from(BAD), st.integers(0, 7), st.booleans()
            )
            return drawn.map(lambda d: self._aimed(case, d))

        self.schema.hook(flatmap_case)

    @property
    def world(self) -> World:
        assert self._world is not None, "no guarded server is running"
        return self._world

    @contextmanager
    def running(self, container: Container) -> Iterator[str]:
        """The container seeded and served; when the run ends, what it must have left as it was."""
        world = self._world = _seed(container)
        before = _snapshot(container, world.theirs)
        with serve(create_app(container)) as base:
            assert httpx.get(f"{base}/openapi.json", timeout=30).json() == DOCUMENT
            assert httpx.get(f"{base}/v1/brains", timeout=30).status_code == 401, "the server is not guarded"
            yield base
        assert _snapshot(container, world.theirs) == before, "a caller changed what it may not"
        assert world.requests > 10 * len(OPERATIONS), "the fuzz made too few requests to mean anything"
        for caller in ("limited", "reader"):  # else the aims missed and the run proves little
            assert world.answered[caller, 2] > len(OPERATIONS), (caller, world.answered)

    def send(self, case: Any, base: str) -> None:
        self.world.requests += 1
        case.call_and_validate(base_url=base, checks=[*CHECKS, self.within_its_credential], timeout=30)

    def _aimed(self, case: Any, drawn: tuple[str, str, int, bool]) -> Any:
        """The case sent by `caller`, with each parameter that names something set to an existing
        value (`pick` chooses which) when `aim` is drawn."""
        caller, bad, pick, aim = drawn
        world = self.world
        credential = {**world.credentials, "bad": bad}.get(caller)
        if credential is not None:
            case.headers = {**(case.headers or {}), "authorization": f"Bearer {credential}"}
        if aim:
            for part in ("path_parameters", "query"):
                values = getattr(case, part)
                if values:
                    setattr(case, part, {k: _pick(world.aims.get(k), v, pick) for k, v in values.items()})
            if case.operation.path == "/v1/archive/import":
                case.body = world.archive
        return case

    def _caller(self, response: Any) -> str:
        sent = response.request.headers.get("authorization")
        if sent is None:
            return "none"
        by_credential = {f"Bearer {v}": k for k, v in self.world.credentials.items()}
        return by_credential.get(sent, "bad")

    def _names_theirs(self, case: Any) -> bool:
        world = self.world
        theirs = {"theirs", world.theirs.id, world.aims["sessionId"][1], world.aims["jobId"][1]}
        named = [*(case.path_parameters or {}).values(), *(case.query or {}).values()]
        return any(isinstance(v, str) and v in theirs for v in named)

    def within_its_credential(self, ctx: Any, response: Any, case: Any) -> bool | None:
        """What the caller's credential allows, and nothing more, whatever else the request holds."""
        world = self.world
        template, method = case.operation.path, case.method.upper()
        caller, status, text = self._caller(response), response.status_code, response.text
        world.answered[caller, status // 100] += 1
        for credential in (TOKEN, *world.credentials.values()):
            assert credential not in text, f"{caller}: a credential came back in the answer"
        if template in PUBLIC_PATHS:
            return None
        scope = ROUTE_SCOPES.get((method, template)) or ROUTE_SCOPES.get(("GET", template))
        if caller in ("none", "bad"):
            # a body over the cap is refused before anything reads it, credential or not
            assert status == 401 or _over_the_cap(response), f"{caller} got {status}, not 401"
        elif scope == ADMIN or (scope != READ and caller == "reader"):
            assert status == 403 or _over_the_cap(response), f"{caller} got {status}, needing {scope}"
        elif caller == "limited":
            if self._names_theirs(case):
                assert status >= 400, f"the limited key got {status} on their brain"
            sent = f"{response.request.url} {response.request.body!r}"
            assert SECRET not in text, "the limited key read their brain"
            assert world.theirs.id not in text or world.theirs.id in sent, "the limited key learnt their id"
        return None


def _over_the_cap(response: Any) -> bool:
    """A 413 for a body really over the cap it names (entrypoints/body_limit.py)."""
    said = re.search(r"request body exceeds (\d+) bytes", response.text)
    return (
        response.status_code == 413 and said is not None and len(response.request.body or b"") > int(said[1])
    )


def _pick(choices: list[str] | None, generated: Any, pick: int) -> Any:
    return choices[pick % len(choices)] if choices else generated
