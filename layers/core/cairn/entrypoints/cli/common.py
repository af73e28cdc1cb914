"""What the `cairn` commands share: Settings from their arguments (the only place outside the
composition root that builds them), opening the store, and naming brains."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING

from pydantic import ValidationError
from pydantic_settings import SettingsError

from cairn.config import Settings
from cairn.domain.errors import CairnError, InvalidInput, NoBrain
from cairn.domain.models import Brain
from cairn.entrypoints.cli.check import settle
from cairn.entrypoints.cli.opened import opened
from cairn.services.brains import is_slug

if TYPE_CHECKING:
    from cairn.container import Container


STORE_FILE = "records.sqlite3"


class NoStore(CairnError):
    code = "no_store"


def settings_from(args: argparse.Namespace, **extra: object) -> Settings:
    overrides: dict[str, object] = {k: v for k, v in extra.items() if v is not None}
    if getattr(args, "data_dir", None) is not None:
        overrides["data_dir"] = args.data_dir
    try:
        return Settings(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:  # which setting and why; never its value (it may be a secret)
        problems = [
            f"{'CAIRN_' + '_'.join(str(p) for p in e['loc']).upper() if e['loc'] else 'settings'}: "
            f"{e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors(include_input=False, include_url=False)
        ]
        raise InvalidInput("invalid settings: " + "; ".join(problems)) from None
    except SettingsError as exc:  # a list or mapping setting whose value is not JSON
        field = re.search(r'field "([a-z0-9_]+)"', str(exc))
        name = f"CAIRN_{field.group(1).upper()}" if field else "a setting"
        raise InvalidInput(
            f"invalid settings: {name}: not valid JSON (a list or mapping setting takes JSON, "
            'e.g. ["a", "b"])'
        ) from None


def open_store(
    args: argparse.Namespace,
    *,
    existing: bool,
    settled: bool = True,
    verified: bool = False,
    repair: bool = True,
) -> Container:
    """The store in the data directory. A command that only reads it (`existing`) refuses a
    directory holding no store instead of creating an empty one there (a mistyped --data-dir).
    What a stopped process left unindexed is indexed first, unless not `settled`. A `verified`
    store had every page of its databases read first (bootstrap/local.py `check_local_files`);
    a damaged search index is then set aside to be rebuilt, unless not `repair`."""
    from cairn.bootstrap import build_container
    from cairn.bootstrap.local import check_local_files, refuse_lost_records

    settings = settings_from(args)
    store = settings.data_dir / STORE_FILE
    if existing and settings.backend == "local" and not (store.exists() or store.is_symlink()):
        refuse_lost_records(settings.data_dir)  # records gone beside stored content: not "no store"
        raise NoStore(
            f"no Cairn store in {settings.data_dir.resolve()}: check --data-dir (or CAIRN_DATA_DIR); "
            "`cairn serve`, `cairn ingest` and `cairn brains create` make one"
        )
    if verified:
        check_local_files(settings, set_aside=repair)
    container = build_container(settings)
    opened(container)
    if settled:
        settle(container)
    return container


def brain_of(container: Container, ref: str | None, *, writes: bool = False, create: bool = False) -> Brain:
    """The brain a command acts on, said on stderr: `ref` (created when `create`), else the
    default or first brain, else, for a command that `writes`, a new `default` brain."""
    try:
        brain = container.brains.resolve(ref)
    except NoBrain:
        if ref is None and writes:
            brain = container.brains.create("default", slug="default")
        elif ref is None:
            raise NoBrain("no brain exists yet: create one with `cairn brains create NAME`") from None
        elif create:
            brain = container.brains.create(ref, slug=ref if is_slug(ref) else None)
        else:
            raise NoBrain(f"no brain matches {ref!r}: create it with `cairn brains create {ref}`") from None
    say_brain(ref, brain.slug)
    return brain


def say_brain(ref: str | None, slug: str) -> None:
    print(f"brain: {slug}" + ("" if ref else " (no --brain given: the default brain)"), file=sys.stderr)
