"""What the `cairn` command says, held still: `--help` of it and of every subcommand (found by walking
the parser, so a new one is caught), `--version`, and the errors of arguments it refuses or of a
command run on a data directory holding no store. The parser names each command's function and
imports its module when the command runs: this is what that must not change.

tests/snapshots/cli_help.json is the record; after a deliberate change to the command's words,
rewrite it with `WRITE_CLI_SNAPSHOT=1` and read the diff."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.entrypoints.cli import main
from cairn.entrypoints.cli.parser import Runs, build_parser

SNAPSHOT = Path(__file__).parents[2] / "snapshots" / "cli_help.json"
REFUSED = (
    (),
    ("bogus",),
    ("--data-dir", "x"),
    ("serve", "--port", "eighty"),
    ("serve", "--log-level", "loud"),
    ("mcp", "--surface", "nope"),
    ("ingest",),
    ("search",),
    ("search", "tea", "--top-k", "0"),
    ("search", "tea", "--top-k", "ten"),
    ("brains", "create"),
    ("brains", "create", "Tea", "--slug", "tea", "--suffix"),
    ("brains", "create", "Tea", "--visibility", "everyone"),
    ("brains", "update", "tea", "--library-type", "nope"),
    ("brains", "remove", "tea"),
    ("brains", "list", "--bogus"),
    ("erase", "nobody", "x"),
    ("collections", "create", "tea"),
    ("export",),
    ("compact", "--threads", "many"),
    ("calibrate",),
    ("check", "--deep", "--bogus"),
    ("import",),
    ("keys",),
    ("keys", "create", "--name", "a", "--tenant", "t"),
    ("keys", "create", "--name", "a", "--tenant", "t", "--scope", "everything"),
    ("oauth-clients",),
    ("oauth-clients", "revoke"),
    ("secret", "drop-previous", "--bogus"),
    ("smoke",),
    ("smoke", "https://x.example", "--ingest-bytes", "big"),
)
NO_STORE = (
    ("brains", "list"),
    ("brains", "update", "tea", "--visibility", "public"),
    ("brains", "delete", "tea", "--yes"),
    ("collections",),
    ("search", "tea"),
    ("export", "tea"),
    ("compact",),
    ("check",),
    ("erase", "any", "someone", "--yes"),
    ("oauth-clients", "list"),
    ("secret",),
)


def parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from parsers(child, (*path, name))


def commands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, ...]]:
    return (path for path, _ in parsers(parser))


def said(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...]) -> dict[str, object]:
    try:
        code: object = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return {"code": code, "out": out, "err": err}


@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Help wrapped at 100 columns whatever the terminal, no setting from the environment, and an
    empty data directory as the default one."""
    for name in list(os.environ):
        if name.startswith("CAIRN_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COLUMNS", "100")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("CAIRN_DATA_DIR", str(empty))
    return empty


def test_help_version_and_refusals_say_what_they_said(
    plain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: dict[str, dict[str, object]] = {}
    for path in commands(build_parser()):
        seen[" ".join(("cairn", *path, "--help"))] = said(capsys, (*path, "--help"))
    seen["cairn --version"] = said(capsys, ("--version",))
    for argv in REFUSED:
        seen[" ".join(("cairn", *argv))] = said(capsys, argv)
    for argv in NO_STORE:
        answer = said(capsys, argv)
        answer["err"] = str(answer["err"]).replace(str(plain.resolve()), "<EMPTY>")
        seen[" ".join(("cairn", *argv)) + " (no store)"] = answer
    if os.environ.get("WRITE_CLI_SNAPSHOT") == "1":
        SNAPSHOT.write_text(json.dumps(seen, indent=1, ensure_ascii=False) + "\n")
    recorded = json.loads(SNAPSHOT.read_text())
    assert list(seen) == list(recorded)
    for what, answer in seen.items():
        assert answer == recorded[what], what
    assert len([w for w in seen if w.endswith("--help")]) >= 24  # every subcommand was walked
    assert all(
        a["code"] == 2 and str(a["err"]).startswith("usage: cairn")
        for a in (seen[" ".join(("cairn", *r))] for r in REFUSED)
    )


def test_every_command_names_a_function_that_exists() -> None:
    """A command's module is imported only when it runs: a misnamed one would fail only then."""
    named = {path[0]: p.get_default("func") for path, p in parsers(build_parser()) if len(path) == 1}
    assert len(named) == 16
    for command, runs in named.items():
        assert isinstance(runs, Runs), command
        assert callable(runs.function()), command
