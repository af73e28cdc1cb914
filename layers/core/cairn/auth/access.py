"""Who the current request acts as, what the route or tool it reached needs, and the one rule
that decides what it may see and change.

Surfaces set the first two (HTTP middleware: the principal; a REST route or an MCP tool: the
scope) in a context variable, which follows the request into worker threads. No access set means
the system itself (jobs, the CLI, tests), which may do anything; an access without a scope means
a route or tool that declared none, which may do nothing: a missing declaration fails closed.

The rule (`may_see`, `may_change`) has two parts, both decided here and nowhere else:
- the brain: tenant, owner, visibility, a key's brain list or a JWT's `libs` (`may`);
- the item's owner, where an item has one (a ThoughtMCP memory's `userId`): a principal acts for
  the owners of its own tenant's brains that are itself or its sub-users (`<subject>:<name>`), or
  for all of them as the open loopback owner or with brains:admin (`acts_for`).
BrainService checks every brain it hands out; the repositories (services/repositories.py,
services/documents/visible_chunks.py) apply the item rule inside every read, so no surface decides it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Final

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
    brains: dict[str, Brain | None] = field(default_factory=dict, compare=False, repr=False)
    """Brains this request has looked up, by id (repositories check an item's brain through it, so a
    request reads each brain's record once)."""
    listings: dict[str, tuple[str, ...]] | None = field(default_factory=dict, compare=False, repr=False)
    """The brain ids of each pointer partition this request read to its end (services/brain_pointers.py),
    so a call that lists the caller's brains more than once reads them once; None: not kept (a job,
    which may run long)."""


_current: ContextVar[Access | None] = ContextVar("cairn_access", default=None)


def current() -> Access | None:
    return _current.get()


@contextmanager
def acting_as(principal: Principal, scope: str | None = None, *, lists_once: bool = True) -> Iterator[Access]:
    """Act as `principal` until the block ends: one request or call (`lists_once`: what it listed
    of its brains is kept until then, not read again)."""
    entered = Access(principal, scope, listings={} if lists_once else None)
    token = _current.set(entered)
    try:
        yield entered
    finally:
        _current.reset(token)


@contextmanager
def as_system() -> Iterator[None]:
    """Run as the system (no principal): what a request does on the system's behalf once it has
    been authorised for it, such as an erasure's removals."""
    token = _current.set(None)
    try:
        yield
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
    """Whether `principal` may do what `scope` allows on `brain` (scopes checked separately).

    A private brain belongs to its owner; one without an owner (made before every brain had one)
    belongs to nobody a credential can name until the operator gives it one."""
    if principal.brains is not None and brain.id not in principal.brains:
        return False
    if brain.owner_tenant == principal.tenant and principal.brains is not None:
        return True  # the key names this brain: a grant by whoever could use it (admin or operator)
    if brain.owner_tenant == principal.tenant:
        return brain.visibility is not Visibility.private or owns(principal, brain)
    return brain.visibility is Visibility.public and scope == READ


def owns(principal: Principal, brain: Brain) -> bool:
    """Whether `principal` is `brain`'s owner: its tenant's, with the owner's subject, and of the kind
    of principal that subject names (`_own_namespace`): a token whose `sub` is an API key's
    `key:<id>`, an AWS caller's ARN or the machine owner's `local` owns none of their brains."""
    return (
        brain.owner is not None
        and brain.owner_tenant == principal.tenant
        and brain.owner == principal.subject
        and _own_namespace(principal)
    )


def acts_for(principal: Principal, tenant: str, owner: str) -> bool:
    """Whether `principal` may act for `owner` (a ThoughtMCP userId) in a brain of `tenant`: the
    open loopback owner and admins for anyone of their own tenant, anyone else for itself and its
    sub-users (`<subject>:<name>`: an agent's key acting for its own users). Nobody acts for the
    users of another tenant's brain, public or not."""
    view = _owners_seen(principal, tenant)
    return view == ALL_OWNERS or (view is not None and (owner == view or owner.startswith(f"{view}:")))


def may_see(principal: Principal, brain: Brain, owner: str | None = None) -> bool:
    """The read rule: the brain is readable and, for an item with an owner, the principal acts for
    it. Scopes are the operation's business, checked where it is declared."""
    return may(principal, brain, READ) and (owner is None or acts_for(principal, brain.owner_tenant, owner))


def may_change(principal: Principal, brain: Brain, owner: str | None = None) -> bool:
    """The write rule: the brain is writable and, for an item with an owner, the principal acts for it."""
    return may(principal, brain, WRITE) and (owner is None or acts_for(principal, brain.owner_tenant, owner))


ALL_OWNERS: Final = "*"
"""`owner_view` for a principal that sees every owner's items of a brain."""


def owner_view(principal: Principal, brain: Brain) -> str | None:
    """Which owned items of `brain` the principal sees: ALL_OWNERS, a subject (its own and its
    sub-users', as `acts_for` says), or None (none: another tenant's brain). Unowned items are
    governed by `may` alone."""
    return _owners_seen(principal, brain.owner_tenant)


def _owners_seen(principal: Principal, tenant: str) -> str | None:
    if tenant != principal.tenant:
        return None
    if principal.via is Via.open or principal.has(ADMIN):
        return ALL_OWNERS
    if not _own_namespace(principal):
        return None
    return principal.subject


RESERVED_SUBJECTS: Final = {
    "key": (Via.api_key, Via.job),
    "arn": (Via.iam, Via.job),
    "aws": (Via.iam, Via.job),
    "local": (Via.open, Via.static_token, Via.job),
}
"""Subject namespaces only one kind of principal has (auth/api_keys.py names a key `key:<id>`;
an AWS caller is its ARN, or `aws:` and its caller id or account when it has none; the machine
owner is `local`), and the job acting for one."""


def _own_namespace(principal: Principal) -> bool:
    """Whether the principal's subject is of its own kind: a token whose subject is `key`, `arn`, `aws`,
    `local` or starts with one of them and `:` would otherwise own their brains (`owns`) and act
    for their users (the sub-user rule); such a principal owns no brain and acts for no owner."""
    root = principal.subject.partition(":")[0]
    kinds = RESERVED_SUBJECTS.get(root)
    return kinds is None or principal.via in kinds


def view_of(brain: Brain) -> str | None:
    """`owner_view` for the current access (the system sees every owner): what a cache of a brain's
    listing or counts is kept per, when it holds owned items."""
    access = _current.get()
    return ALL_OWNERS if access is None else owner_view(access.principal, brain)


def seer(brain: Brain) -> Callable[[str | None], bool]:
    """`may_see` of `brain`'s items by owner, for the current access, to be asked later (a change
    stream's subscriber told of each change); the system sees everything."""
    access = _current.get()
    if access is None:
        return lambda owner: True
    principal = access.principal
    return lambda owner: may_see(principal, brain, owner)


def check_change(brain: Brain, owner: str | None, what: str) -> None:
    """Forbidden unless the current access may change `what` (an item of `owner` in `brain`)."""
    access = _current.get()
    if access is not None and not may_change(access.principal, brain, owner):
        raise Forbidden(f"this credential may not change {what}")


def offers_change(brain: Brain, owner: str | None = None) -> bool:
    """Whether the current access holds the write scope and may change an item of `owner` in `brain`:
    what a page offers to edit (the change itself is checked again where it is made)."""
    access = _current.get()
    return access is None or (access.principal.has(WRITE) and may_change(access.principal, brain, owner))


def check_acts_for(brain: Brain | None, owner: str) -> None:
    """Forbidden unless the current access may act for `owner` (a ThoughtMCP userId) in `brain`,
    or, with None, in a brain of its own tenant (one a first write is about to make)."""
    access = _current.get()
    if access is None:
        return
    tenant = brain.owner_tenant if brain is not None else access.principal.tenant
    if not acts_for(access.principal, tenant, owner):
        raise Forbidden(f"this credential may not act as user {owner[:64]!r}")


def remembered_brain(brain_id: str, lookup: Callable[[str], Brain | None]) -> Brain | None:
    """The brain `brain_id` as this request first looked it up (through `lookup` the first time);
    None for one that does not exist or is being deleted."""
    access = _current.get()
    if access is not None and brain_id in access.brains:
        return access.brains[brain_id]
    found = lookup(brain_id)
    live = found if found is not None and found.deleted_at is None else None
    if access is not None:
        access.brains[brain_id] = live
    return live


def remember(brains: Iterable[Brain]) -> None:
    """Brains this request has read in a batch (a listing, the choice of a default), kept as
    `remembered_brain` keeps a lookup, so a repository's check does not read them again. A brain
    the request looked up before stays as it was first seen."""
    access = _current.get()
    if access is not None:
        for brain in brains:
            access.brains.setdefault(brain.id, brain if brain.deleted_at is None else None)


def rewritten(brain_id: str) -> None:
    """This request wrote the brain `brain_id` (made, changed, deleted): what it remembered of the
    brain and of the listings that may name it is read again when next asked."""
    access = _current.get()
    if access is not None:
        access.brains.pop(brain_id, None)
        if access.listings is not None:
            access.listings.clear()


def may_erase(brain: Brain) -> bool:
    """Whether the current access may erase a subject in `brain` or delete it: the system, or a
    principal that may change the brain and is its owner or holds brains:admin."""
    access = _current.get()
    if access is None:
        return True
    p = access.principal
    return may(p, brain, WRITE) and (p.has(ADMIN) or owns(p, brain))


def may_govern(brain: Brain) -> bool:
    """Whether the current access may change who `brain` belongs to and who else may see it, or
    delete it: the system; else a principal with brains:admin that may change the brain and is
    its owner or, for a `tenant` or `public` brain, an admin of its tenant. A key whose list names
    another subject's private brain may use that brain, not give it away, open it or delete it."""
    access = _current.get()
    if access is None:
        return True
    p = access.principal
    if not (p.has(ADMIN) and may(p, brain, WRITE)):
        return False
    return brain.visibility is not Visibility.private or owns(p, brain)


def check_govern(brain: Brain) -> Brain:
    """`brain` when the current access may govern it (`may_govern`); Forbidden otherwise."""
    if not may_govern(brain):
        what = "may change its owner or visibility, or delete it"
        raise Forbidden(f"only the owner of the private brain {brain.slug} {what}")
    return brain


def check_brain(brain: Brain) -> Brain:
    """`brain` when the current access may use it for its scope; Forbidden otherwise."""
    access = _current.get()
    if access is None:
        return brain
    if access.scope is None or not access.principal.has(access.scope):
        raise InsufficientScope(access.scope)
    if not may(access.principal, brain, access.scope):
        raise Forbidden(f"brain {brain.slug} belongs to another tenant or owner, or this key is not for it")
    access.brains[brain.id] = brain
    return brain


def hidden(brain: Brain) -> bool:
    """Whether the current access may not even read `brain`, whatever its scopes: such a brain is
    answered as one that does not exist (services/brains.py `get`)."""
    access = _current.get()
    return access is not None and not may(access.principal, brain, READ)


def readable(brains: list[Brain]) -> list[Brain]:
    """The brains the current access may read (all of them for the system)."""
    access = _current.get()
    if access is None:
        return brains
    if not access.principal.has(READ):
        return []
    return [b for b in brains if may(access.principal, b, READ)]


def defaults(brains: list[Brain]) -> list[Brain]:
    """Of `brains`, those a tool may take when the caller names none: the caller's own tenant's
    brains that it may use for the current scope (another tenant's public brain is never a default)."""
    access = _current.get()
    if access is None:
        return brains
    p, scope = access.principal, access.scope or READ
    return [b for b in brains if b.owner_tenant == p.tenant and may(p, b, scope)]


def own_tenant(brain: Brain) -> bool:
    """Whether `brain` belongs to the current principal's tenant (always, for the system): a
    reader of another tenant's public brain leaves nothing of itself in it, not even what a read
    notes (a damaged-content mark holds the brain's state, not its reader's: damaged_marks.py)."""
    access = _current.get()
    return access is None or brain.owner_tenant == access.principal.tenant


def key_grant(scopes: Iterable[str], brains: Sequence[str] | None) -> list[str] | None:
    """The brain list of an API key created now: never a reach its creator lacks. A creator
    limited to some brains limits the new key to some of them (to all of its own when it names
    none); no creator gives a scope it does not hold. The system (the CLI) grants anything."""
    access = _current.get()
    if access is None:
        return list(brains) if brains is not None else None
    p = access.principal
    missing = [s for s in dict.fromkeys(scopes) if not p.has(s)]
    if missing:
        raise Forbidden(f"a key cannot be given a scope its creator lacks: {', '.join(missing)}")
    if p.brains is None:
        return list(brains) if brains is not None else None
    if brains is None:
        return sorted(p.brains)
    if not may_manage_key(brains):
        raise Forbidden("a key limited to some brains can only create keys limited to them")
    return list(brains)


def may_manage_key(brains: Sequence[str] | None, lookup: Callable[[str], Brain | None] | None = None) -> bool:
    """Whether the current principal may see and revoke a key of its tenant reaching `brains`
    (None: every brain): one limited to some brains only keys limited to them; any other only
    keys whose brains it may read (found through `lookup`), so a key limited to another member's
    private brain tells it nothing of that brain, not even its id."""
    access = _current.get()
    if access is None:
        return True
    if access.principal.brains is not None:
        return brains is not None and all(b in access.principal.brains for b in brains)
    if brains is None or lookup is None:
        return True
    held = (remembered_brain(b, lookup) for b in brains)
    return all(brain is None or may(access.principal, brain, READ) for brain in held)


def unlimited() -> bool:
    """Whether the current principal reaches every brain its tenant may (no key brain list):
    what it takes to read the tenant's records that name no brain (the audit of key changes)."""
    access = _current.get()
    return access is None or access.principal.brains is None


def started_by() -> str | None:
    """`tenant/subject` of the current principal (who asked for an erasure); None: the system."""
    access = _current.get()
    return f"{access.principal.tenant}/{access.principal.subject}" if access else None


_JOB_SCOPES: Final = (READ, WRITE)


def job_principal() -> str | None:
    """Who a job started now runs as, recorded on it: `tenant/subject` for a principal holding
    read and write on every brain it may see; else JSON that also keeps its reach (the scopes of
    those two it holds, its key's brain list), so the job can do no more than its starter could.
    None: the system."""
    access = _current.get()
    if access is None:
        return None
    p = access.principal
    scopes = [s for s in _JOB_SCOPES if p.has(s)]
    own = _own_namespace(p)
    if p.brains is None and len(scopes) == len(_JOB_SCOPES) and own:
        return f"{p.tenant}/{p.subject}"
    brains = sorted(p.brains) if p.brains is not None else None
    reach = {"tenant": p.tenant, "subject": p.subject, "scopes": scopes, "brains": brains}
    if not own:  # a token whose subject names another kind: its job owns nothing either
        reach["via"] = p.via.value
    return json.dumps(reach, separators=(",", ":"))


@contextmanager
def on_behalf_of(started_by: str | None) -> Iterator[None]:
    """Run a job as the principal that started it (see `job_principal`), with the read and write
    scopes it held (both, for the plain `tenant/subject` form) and its brain list; as the system
    when nobody did (a schedule, the CLI), even when a request's thread runs it."""
    if not started_by:
        with as_system():
            yield
        return
    if started_by.startswith("{"):  # a tenant name never starts with a brace
        reach = json.loads(started_by)
        brains = reach.get("brains")
        principal = Principal(
            str(reach["tenant"]),
            str(reach["subject"]),
            frozenset(s for s in reach.get("scopes", ()) if s in _JOB_SCOPES),
            Via(reach.get("via", Via.job.value)),
            frozenset(brains) if brains is not None else None,
        )
    else:
        tenant, _, subject = started_by.partition("/")
        principal = Principal(tenant, subject, frozenset(_JOB_SCOPES), Via.job)
    with acting_as(principal, WRITE, lists_once=False):
        yield


LOCAL_TENANT: Final = "local"
LOCAL_OWNER: Final = "local"
"""The machine owner (tenant and subject): the open loopback caller, the static token's holder and
the operator at the command line, whose brains are theirs whichever way they come in."""


def tenant() -> str:
    """The current principal's tenant; the machine owner's for the system (the CLI)."""
    access = _current.get()
    return access.principal.tenant if access is not None else LOCAL_TENANT


def creator() -> tuple[str, str]:
    """(tenant, owner subject) for a brain created now; needs brains:admin from a principal. The
    system (the CLI) creates for the machine's owner."""
    access = _current.get()
    if access is None:
        return LOCAL_TENANT, LOCAL_OWNER
    if not access.principal.has(ADMIN):
        raise InsufficientScope(ADMIN)
    if access.principal.brains is not None:  # a new brain is never on the list: nobody could use it
        raise Forbidden("a credential limited to some brains cannot create a brain")
    if not _own_namespace(access.principal):  # it would be another principal's brain
        raise Forbidden("a credential whose subject names another kind of principal cannot create a brain")
    return access.principal.tenant, access.principal.subject
