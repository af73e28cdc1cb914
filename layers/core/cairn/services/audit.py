"""An append-only audit record of every mutation: who, what, which brain, which path or id, when.

Layout (one item per entry and index, each written with expected_version=0, never overwritten):

| record          | pk                                    | sk                                |
|-----------------|---------------------------------------|-----------------------------------|
| entry by tenant | `audit#<tenant>#<yyyy-mm-dd>`         | `<yyyy-mm-ddThh:mm:ss.ffffff>Z#<id>` |
| entry by brain  | `audit-brain#<brain_id>#<yyyy-mm-dd>` | the same                          |
| recorded once   | `audit-once`                          | `<action>#<target>`               |

Day partitions keep each partition small and let a query walk a time window with one Query per
day and no scans. Queries return entries **newest first**; the cursor is the sort key of the
last entry returned, so the next page resumes strictly before it.

An action of ONCE_PER_TARGET (an erasure's, whose target is its id) is recorded once per target:
its entry is written with a mark of it, in one transaction that fails if the mark is there, so two
processes finishing the same erasure at once (or one resuming it after a kill that came after its
entry) write one entry between them. The mark holds nothing else, and stays.

One module past 500 lines: writing an entry, the entries kept while the store refuses them and
their redaction share the kept queue and its lock, which a split would pass back and forth.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import suppress
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from cairn.auth.principal import Principal
from cairn.domain.errors import CairnError, Conflict, InvalidInput, Unavailable
from cairn.domain.ids import new_id
from cairn.ports.audit_spill import AuditSpill
from cairn.ports.clock import Clock
from cairn.ports.records import MAX_SCAN_PREFIXES, Item, Put, RecordStore
from cairn.ports.store_secret import StoreSecret
from cairn.services.audit_marks import ErasedNames
from cairn.services.documents.listing import encode_cursor
from cairn.services.keyed_digests import NoSecret

SYSTEM = "system"
ONCE_PK = "audit-once"
MAX_VALUE_CHARS = 512
MAX_DETAIL_KEYS = 32
MAX_LIMIT = 1000
MAX_KEPT = 10_000
"""Entries a process keeps while the store refuses them as busy (`Unavailable`), oldest first."""
MAX_RANGE = timedelta(days=92)
DEFAULT_RANGE = timedelta(days=7)

_TOKEN = re.compile(r"^[a-z][a-z0-9_.:-]{0,63}$")  # actions ("document.write") and outcomes
_DETAIL_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
_SECRET_KEY = re.compile(r"token|secret|passw|authorization|api_?key|cookie|credential|private_?key", re.I)
_SK = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z#aud_[0-9a-z]{26}$")

ONCE_PER_TARGET = frozenset({"erasure"})
"""Actions recorded once per target (module docstring)."""

REDACTED = "[erased]"
"""What an erased subject's name or target reads as in the audit afterwards."""


class AuditEntry(BaseModel):
    id: str
    at: datetime
    tenant: str
    subject: str
    via: str
    action: str
    brain_id: str | None = None
    target: str | None = None  # a path or an id
    outcome: str = "ok"
    detail: dict[str, str | int | bool] = {}


log = logging.getLogger(__name__)


class AuditLog:
    """Entries are recorded after the action they record succeeded, so one the store refuses as
    busy (its writer lock held past the wait: `Unavailable`) does not undo or fail the action: it
    is kept, with its own time, and written before the next entry this process records (a warning
    says so, once per entry).

    A process that stops calls `close`: what is still kept goes to the `spill` (durable), then is
    written if the store takes it. A later AuditLog on the spill takes what it holds, never as it
    is made (a busy store would hold the process's start up for the whole wait): `take_spilled`,
    which the sweep calls, and `close`, which takes a batch before it writes. What it takes is kept
    (in the spill too) while the store still refuses it. An entry written twice this way is one
    entry: its second write meets its own key and adds nothing."""

    def __init__(
        self, records: RecordStore, clock: Clock, spill: AuditSpill | None = None, *, secret: StoreSecret
    ) -> None:
        self.records = records
        self.clock = clock
        self.spill = spill
        self._kept: deque[tuple[AuditEntry, list[Put]]] = deque()
        self._kept_lock = threading.Lock()
        self._spilled: set[str] = set()  # ids of the kept entries the spill holds too
        self._taking = threading.Lock()
        self.erased = ErasedNames(records, clock, secret)

    def take_spilled(self) -> int:
        """Write what the spill holds, a batch at a time, and what this process keeps; how many stay
        kept (the store refuses them). A batch leaves the spill only once written, so a process
        killed meanwhile loses none (the next one writes it again, which adds nothing)."""
        with self._taking:
            while True:
                more = self._read_spilled()
                if (refused := self._write_kept()) is not None:
                    log.warning("%d audit entries are kept: %s", len(self._kept), refused)
                    return len(self._kept)
                if not more:
                    return 0

    def _read_spilled(self) -> bool:
        """Keep the next batch the spill holds (but those kept already); whether more may follow.
        An unusable spill (not a file, unreadable) is said, not raised, the file left as it is."""
        if self.spill is None:
            return False
        try:
            held = self.spill.read(MAX_KEPT)
        except CairnError as exc:
            log.warning("the audit entries a stopped process left cannot be taken: %s", exc.message)
            return False
        with self._kept_lock:
            fresh = [data for data in held if data["id"] not in self._spilled]
        unreadable: set[str] = set()
        taken: list[AuditEntry] = []
        for data in fresh:
            try:
                taken.append(AuditEntry.model_validate(data))
            except ValueError:
                log.warning("an audit entry a stopped process left is unreadable; skipped")
                unreadable.add(data["id"])
        self._unspill(unreadable)
        with self._kept_lock:
            self._kept.extend((entry, _ops(entry)) for entry in taken)
            self._spilled.update(entry.id for entry in taken)
        return len(held) == MAX_KEPT and bool(fresh)

    def _unspill(self, ids: set[str]) -> None:
        """Drop these entries from the spill: written (or never writable)."""
        if self.spill is None or not ids:
            return
        try:
            self.spill.rewrite(lambda data: None if data.get("id") in ids else data)
        except CairnError as exc:  # left in the spill: written again later, which adds nothing
            log.warning("%d audit entries written stay in the spill too: %s", len(ids), exc.message)

    def close(self) -> int:
        """At a process's stop: the entries still kept are made durable in the spill, then
        written if the store takes them (waiting as any write does, no longer). Returns how many
        are left unwritten (in the spill, or lost when there is none: a warning says so). A batch
        the spill holds is taken first and written with them, if this process has not taken it."""
        with self._taking:
            self._read_spilled()
        durable = self.spill is not None
        with self._kept_lock:
            if not self._kept:
                return 0
            if self.spill is not None:
                fresh = [entry for entry, _ in self._kept if entry.id not in self._spilled]
                try:
                    self.spill.append([entry.model_dump(mode="json") for entry in fresh])
                    self._spilled.update(entry.id for entry in fresh)
                except CairnError as exc:  # still written below if the store takes them
                    log.warning("audit entries cannot be kept for a later process: %s", exc.message)
                    durable = False
        if self._write_kept() is None:
            return 0
        with self._kept_lock:
            left = len(self._kept)
        if not durable:
            log.warning("%d audit entries the store refused are lost at this stop", left)
        else:
            log.warning("%d audit entries the store refused are kept for a later process", left)
        return left

    def record(
        self,
        principal: Principal | None,
        action: str,
        *,
        brain_id: str | None = None,
        target: str | None = None,
        outcome: str = "ok",
        detail: Mapping[str, str | int | bool] | None = None,
    ) -> AuditEntry:
        """Append one entry; principal None is the system itself (jobs, the CLI)."""
        if not _TOKEN.fullmatch(action):
            raise InvalidInput("an audit action is 1..64 of a-z 0-9 _ . : - (e.g. doc.write)")
        if not _TOKEN.fullmatch(outcome):
            raise InvalidInput("an audit outcome is 1..64 of a-z 0-9 _ . : - (e.g. ok, denied)")
        if brain_id is not None and not brain_id:
            raise InvalidInput("brain_id must not be empty")
        entry = AuditEntry(
            id=new_id("aud"),
            at=_utc(self.clock.now()),
            tenant=principal.tenant if principal else SYSTEM,
            subject=principal.subject if principal else SYSTEM,
            via=str(principal.via) if principal else SYSTEM,
            action=action,
            brain_id=brain_id,
            target=_clip(target) if target is not None else None,
            outcome=outcome,
            detail=_clean_detail(detail or {}),
        )
        ops = _ops(entry)
        reason = "entries kept before it are still refused"
        refused = self._write_kept()  # entries waiting for the secret alone hold no fresh one back
        if refused is None or isinstance(refused, NoSecret):
            try:
                self.records.transact(ops)
                return entry
            except Conflict:
                if not self._recorded_once(entry):
                    raise
                log.info("the %s entry of %s was recorded already", entry.action, entry.target)
                return entry
            except Unavailable as busy:
                reason = str(busy)
        self._keep(entry, ops, reason)
        return entry

    def _recorded_once(self, entry: AuditEntry) -> bool:
        """Whether an entry of this action and target is recorded already (ONCE_PER_TARGET)."""
        key = _once_key(entry)
        return key is not None and self.records.get(*key) is not None

    def _keep(self, entry: AuditEntry, ops: list[Put], reason: str) -> None:
        with self._kept_lock:
            if len(self._kept) >= MAX_KEPT:
                lost, _ = self._kept.popleft()
                log.warning("audit entry %s (%s) dropped: %d kept already", lost.id, lost.action, MAX_KEPT)
            self._kept.append((entry, ops))
        log.warning("audit entry %s (%s) kept to be written later: %s", entry.id, entry.action, reason)

    def _write_kept(self) -> Unavailable | None:
        """Write the entries kept, oldest first; what refused them, if one did (the store, busy; NoSecret).
        Each is checked against the names erased before it is written and again once written (another
        process's erasure may have scanned between: audit_marks.py); only then it leaves the spill."""
        written: list[AuditEntry] = []
        with self._kept_lock:
            if not self._kept:
                return None
            try:
                self._redact_kept()
                while self._kept:
                    entry, ops = self._kept[0]
                    try:
                        self.records.transact(ops)
                    except Unavailable as busy:
                        return busy
                    except Conflict:  # written after all (its id is its own, or its target's mark)
                        pass
                    except InvalidInput as bad:  # a spilled line edited by hand: never writable
                        log.warning("audit entry %s dropped: %s", entry.id, bad)
                    self._kept.popleft()
                    written.append(entry)
            except Unavailable as refused:
                return refused
            finally:
                self._redact_written(written)
        return None

    def _redact_kept(self) -> None:
        """The kept entries a name erased since they were kept names, redacted where they wait."""
        entries = [entry for entry, _ in self._kept]
        for n, fields in enumerate(self.erased.fields(entries)):
            if fields:
                blank = entries[n].model_copy(update=dict.fromkeys(fields, REDACTED))
                self._kept[n] = (blank, _ops(blank))

    def _redact_written(self, written: list[AuditEntry]) -> None:
        """Redact the stored copies of the entries just written that a name erased names; then they
        leave the spill. Unchecked (the store refused), they stay in it for the next process."""
        spilled = {entry.id for entry in written if entry.id in self._spilled}
        try:
            marked = self.erased.fields(written)
            for entry, fields in zip(written, marked, strict=True):
                if fields:
                    self._redact_stored(entry, fields)
        except Unavailable as busy:
            log.warning("%d audit entries written stay in the spill, unchecked: %s", len(spilled), busy)
            return
        self._spilled -= spilled
        self._unspill(spilled)

    def _redact_stored(self, entry: AuditEntry, fields: set[str]) -> None:
        """Both stored copies of `entry` with these fields redacted, over whatever else another
        erasure redacted in them meanwhile."""
        for op in _ops(entry):
            for _ in range(16):
                item = self.records.get(op.item.pk, op.item.sk)
                if item is None or all(item.data.get(f) == REDACTED for f in fields):
                    break
                with suppress(Conflict):  # redacted meanwhile: read it again
                    self.records.put(
                        Item(item.pk, item.sk, {**item.data, **dict.fromkeys(fields, REDACTED)}), item.version
                    )
                    break

    def query(
        self,
        *,
        tenant: str | None = None,
        brain_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
        after: str | None = None,
        visible: Callable[[str | None], bool] | None = None,
    ) -> tuple[list[AuditEntry], str | None]:
        """Entries newest first within [since, until] (default: the last 7 days) and the next cursor.

        By brain when `brain_id` is given (narrowed to `tenant` if both are), else by tenant; with
        `visible`, only entries whose brain (None: none) it passes, as the caller may read them.
        Naive datetimes are taken as UTC. The cursor is None when nothing older is left.
        """
        if tenant is None and brain_id is None:
            raise InvalidInput("an audit query names a tenant or a brain")
        if tenant == "" or brain_id == "":
            raise InvalidInput("tenant and brain_id must not be empty")
        if isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
        try:
            end = _utc(until) if until is not None else _utc(self.clock.now())
        except OverflowError:
            raise InvalidInput("until is out of range once taken to UTC") from None
        try:
            start = _utc(since) if since is not None else None
        except OverflowError:
            raise InvalidInput("since is out of range once taken to UTC") from None
        if start is None:
            try:
                start = end - DEFAULT_RANGE
            except OverflowError as exc:
                raise InvalidInput("until is too early for the default window; give since") from exc
        if start > end:
            raise InvalidInput("since must not be later than until")
        if end - start > MAX_RANGE:
            raise InvalidInput(f"an audit query spans at most {MAX_RANGE.days} days")
        # Exclusive upper bound on sort keys: `$` sorts just after `#`, so entries at `end` are kept.
        upper = _stamp(end) + "$"
        if after is not None:
            upper = min(upper, _decode_cursor(after))
        lower = _stamp(start)

        entries: list[AuditEntry] = []
        last_sk = ""
        for item in self._walk(tenant, brain_id, lower, upper, page_size=min(limit + 1, MAX_LIMIT)):
            entry = AuditEntry.model_validate(item.data)
            if tenant is not None and entry.tenant != tenant:
                continue
            if visible is not None and not visible(entry.brain_id):
                continue
            if len(entries) == limit:  # one more exists: the page is full and has a successor
                return entries, encode_cursor(last_sk)
            entries.append(entry)
            last_sk = item.sk
        return entries, None

    def redact(
        self,
        *,
        tenants: Iterable[str],
        brain_ids: Iterable[str],
        subjects: Iterable[str] = (),
        targets: Iterable[str] = (),
    ) -> int:
        """Rewrite the entries of these tenants and brains that name an erased subject (an
        erasure, the one rewrite an append-only entry gets): an entry whose subject is one of
        `subjects` reads REDACTED there, one whose target is one of `targets` there. Returns how
        many entries changed (each is kept twice: under its tenant and under its brain). Entries
        this process keeps while the store refuses them, and those the spill holds, are redacted
        where they wait; the names are marked first (audit_marks.py), so an entry another process
        writes later is redacted as it is written."""
        tenants, brain_ids = set(tenants), set(brain_ids)
        subjects, targets = set(subjects), set(targets)
        self.erased.mark(tenants=tenants, brain_ids=brain_ids, subjects=subjects, targets=targets)

        def redacted(entry: AuditEntry) -> AuditEntry | None:
            fields = ({"subject"} if entry.subject in subjects else set()) | (
                {"target"} if entry.target in targets else set()
            )
            if not fields or (entry.tenant not in tenants and entry.brain_id not in brain_ids):
                return None
            return entry.model_copy(update=dict.fromkeys(fields, REDACTED))

        changed = self._redact_waiting(redacted)
        prefixes = [f"audit#{t}#" for t in sorted(tenants)]
        prefixes += [f"audit-brain#{b}#" for b in sorted(brain_ids)]
        for start in range(0, len(prefixes), MAX_SCAN_PREFIXES):
            cursor: str | None = None
            while True:
                page = self.records.scan(prefixes[start : start + MAX_SCAN_PREFIXES], cursor=cursor)
                for item in page.items:
                    entry = AuditEntry.model_validate(item.data)
                    blank = redacted(entry)
                    if blank is None:
                        continue
                    with suppress(Conflict):  # written meanwhile: it is the same entry, redacted again
                        self.records.put(Item(item.pk, item.sk, blank.model_dump(mode="json")), item.version)
                    changed.add(entry.id)
                if page.cursor is None:
                    break
                cursor = page.cursor
        return len(changed)

    def _redact_waiting(self, redacted: Callable[[AuditEntry], AuditEntry | None]) -> set[str]:
        """The kept and spilled entries `redacted` changes, rewritten where they wait; their ids.
        Under the kept lock, so none is written unredacted meanwhile."""
        changed: set[str] = set()
        with self._kept_lock:
            for n, (entry, _) in enumerate(self._kept):
                blank = redacted(entry)
                if blank is not None:
                    self._kept[n] = (blank, _ops(blank))
                    changed.add(entry.id)
            if self.spill is None:
                return changed

            def rewritten(data: dict[str, Any]) -> dict[str, Any]:
                try:
                    blank = redacted(AuditEntry.model_validate(data))
                except ValueError:  # unreadable: the next take drops it
                    return data
                if blank is None:
                    return data
                changed.add(blank.id)
                return blank.model_dump(mode="json")

            self.spill.rewrite(rewritten)
        return changed

    def _walk(
        self, tenant: str | None, brain_id: str | None, lower: str, upper: str, *, page_size: int
    ) -> Iterator[Item]:
        """Items with lower <= sk < upper, newest first, one day partition after another."""
        day, first = date.fromisoformat(upper[:10]), date.fromisoformat(lower[:10])
        bound: str | None = upper
        while day >= first:
            pk = _brain_pk(brain_id, day) if brain_id is not None else _tenant_pk(tenant or "", day)
            while True:
                page = self.records.query(pk, after=bound, limit=page_size, descending=True)
                for item in page.items:
                    if item.sk < lower:
                        return
                    yield item
                if page.next_after is None:
                    break
                bound = page.next_after
            if day == first:
                return
            day, bound = day - timedelta(days=1), None


def _ops(entry: AuditEntry) -> list[Put]:
    """The entry's two copies (one when it names no brain), each written only where none is, and
    for an action recorded once per target its mark, written only where none is."""
    sk = f"{_stamp(entry.at)}#{entry.id}"
    data = entry.model_dump(mode="json")
    day = entry.at.date()
    ops = [Put(Item(_tenant_pk(entry.tenant, day), sk, data), expected_version=0)]
    if entry.brain_id is not None:
        ops.append(Put(Item(_brain_pk(entry.brain_id, day), sk, data), expected_version=0))
    if (once := _once_key(entry)) is not None:
        ops.append(Put(Item(*once, {"at": data["at"]}), expected_version=0))
    return ops


def _once_key(entry: AuditEntry) -> tuple[str, str] | None:
    if entry.action in ONCE_PER_TARGET and entry.target is not None:
        return ONCE_PK, f"{entry.action}#{entry.target}"
    return None


def _tenant_pk(tenant: str, day: date) -> str:
    return f"audit#{tenant}#{day.isoformat()}"


def _brain_pk(brain_id: str, day: date) -> str:
    return f"audit-brain#{brain_id}#{day.isoformat()}"


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _stamp(moment: datetime) -> str:
    """Fixed width (years zero-padded), so sort keys order by time."""
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _clip(value: str) -> str:
    return value if len(value) <= MAX_VALUE_CHARS else value[: MAX_VALUE_CHARS - 1] + "…"


def _clean_detail(detail: Mapping[str, str | int | bool]) -> dict[str, str | int | bool]:
    if len(detail) > MAX_DETAIL_KEYS:
        raise InvalidInput(f"audit detail takes at most {MAX_DETAIL_KEYS} keys")
    clean: dict[str, str | int | bool] = {}
    for key, value in detail.items():
        if not isinstance(key, str) or not _DETAIL_KEY.fullmatch(key):
            raise InvalidInput(f"bad audit detail key {str(key)[:64]!r}")
        if _SECRET_KEY.search(key):
            raise InvalidInput(f"audit detail must not carry secrets; refused key {key!r}")
        if not isinstance(value, str | int | bool):
            raise InvalidInput(f"audit detail {key!r} must be a string, an integer or a boolean")
        clean[key] = _clip(value) if isinstance(value, str) else value
    return clean


def _decode_cursor(cursor: str) -> str:
    try:
        sk = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        sk = ""
    if not _SK.fullmatch(sk):
        raise InvalidInput("bad audit cursor")
    return sk
