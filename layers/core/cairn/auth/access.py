"""Who the current request acts as, and what the route or tool it reached needs.

Surfaces set both (HTTP middleware: the principal; a REST route or an MCP tool: the scope) in a
context variable, which follows the request into worker threads. BrainService checks every brain
it hands out against it. No access set means the system itself (jobs, the CLI, tests), which may
do anything; an access without a scope means a route or tool that declared none, which may do
nothing: a missing declaration fails closed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from cairn.domain.errors import Forbidden
from cairn.domain.models import Brain, Visibility


class InsufficientScope(Forbidden):
    """The principal lacks the scope the route or tool needs (RFC 6750 `insufficient_scope`)."""

    def __init__(self, scope: str | None) -> None:
        self.scope = scope
        needed = f"the {scope} scope" if scope else "a declared scope (this operation declares none)"
        super().__init__(f"insufficient_scope: this operation needs {needed}")


class Unauthenticated(Forbidden):
    """No credential was sent, and the operation needs one."""

    code = "unauthorized"

    def __init__(self) -> None:
        super().__init__("authentication required: send Authorization: Bearer <token>")


@dataclass(frozen=True)
class Access:
    principal: Principal
    scope: str | None = None


_current: ContextVar[Access | None] = ContextVar("cairn_access", default=None)


def current() -> Access | None:
    return _current.get()


@contextmanager
def acting_as(principal: Principal, scope: str | None = None) -> Iterator[Access]:
    token = _current.set(Access(principal, scope))
    try:
        yield Access(principal, scope)
    finally:
        _current.reset(token)


def _scoped(scope: str) -> Access | None:
    """The current access, now for an operation that needs `scope`; InsufficientScope if lacking."""
    access = _current.get()
    if access is None:
        return None
    if not access.principal.has(scope):
        if access.principal.via is Via.anonymous:
            raise Unauthenticated()
        raise InsufficientScope(scope)
    return replace(access, scope=scope)


@contextmanager
def needing(scope: str) -> Iterator[Access | None]:
    """The current principal, now for an operation that needs `scope` (checked at once)."""
    scoped = _scoped(scope)
    if scoped is None:
        yield None
        return
    token = _current.set(scoped)
    try:
        yield scoped
    finally:
        _current.reset(token)


def set_scope(scope: str) -> None:
    """Like `needing`, for the rest of the current context (a REST route's dependency)."""
    scoped = _scoped(scope)
    if scoped is not None:
        _current.set(scoped)


def may(principal: Principal, brain: Brain, scope: str) -> bool:
    """Whether `principal` may do what `scope` allows on `brain` (scopes checked separately)."""
    if principal.brains is not None and brain.id not in principal.brains:
        return False
    if brain.owner_tenant == principal.tenant and principal.brains is not None:
        return True  # the key names this brain: a grant by whoever could use it (admin or operator)
    if brain.owner_tenant == principal.tenant:
        owner = brain.owner
        return brain.visibility is not Visibility.private or owner is None or owner == principal.subject
    return brain.visibility is Visibility.public and scope == READ


def check_brain(brain: Brain) -> Brain:
    """`brain` when the current access may use it for its scope; Forbidden otherwise."""
    access = _current.get()
    if access is None:
        return brain
    if access.scope is None or not access.principal.has(access.scope):
        raise InsufficientScope(access.scope)
    if not may(access.principal, brain, access.scope):
        raise Forbidden(f"brain {brain.slug} belongs to another tenant or owner, or this key is not for it")
    return brain


def readable(brains: list[Brain]) -> list[Brain]:
    """The brains the current access may read (all of them for the system)."""
    access = _current.get()
    if access is None:
        return brains
    if not access.principal.has(READ):
        return []
    return [b for b in brains if may(access.principal, b, READ)]


def started_by() -> str | None:
    """`tenant/subject` of the current principal, recorded on the jobs it starts; None: the system."""
    access = _current.get()
    return f"{access.principal.tenant}/{access.principal.subject}" if access else None


@contextmanager
def on_behalf_of(started_by: str | None) -> Iterator[None]:
    """Run a job as the principal that started it (`tenant/subject`, see `started_by`), with the
    read and write scopes its start needed; as the system when nobody did (a schedule)."""
    if not started_by:
        yield
        return
    tenant, _, subject = started_by.partition("/")
    with acting_as(Principal(tenant, subject, frozenset({READ, WRITE}), Via.job), WRITE):
        yield


def creator() -> tuple[str, str | None]:
    """(tenant, owner subject) for a brain created now; needs brains:admin from a principal."""
    access = _current.get()
    if access is None:
        return "local", None
    if not access.principal.has(ADMIN):
        raise InsufficientScope(ADMIN)
    return access.principal.tenant, access.principal.subject
