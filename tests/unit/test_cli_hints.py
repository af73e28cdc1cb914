"""Every hint the `cairn` command prints names only flags the command printing it has. Each string
literal of the CLI package (not a docstring, not an argument of the parser's own declarations)
that names a `--flag` is checked against the parser of the commands its function serves (the
table below); a quoted command (`` `cairn brains create NAME --slug S` ``), anywhere in the
package, is checked against that command's parser."""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import cairn
from cairn.entrypoints.cli.parser import build_parser

PACKAGE = Path(cairn.__file__).parent
CLI = PACKAGE / "entrypoints" / "cli"

OPENS_THE_STORE = [
    "search", "brains list", "brains create", "brains update", "brains delete", "collections list",
    "collections create", "export", "compact", "check", "import", "keys create", "keys list",
    "keys revoke", "erase", "oauth-clients list", "oauth-clients revoke",
]  # fmt: skip
PRINTED_BY: dict[str, list[str]] = {
    "common.open_store": OPENS_THE_STORE,
    "common.say_brain": ["search", "ingest"],
    "common.brain_of": ["search", "ingest"],
    "ingest.cmd_ingest": ["ingest"],
    "remote.RemoteStore.brain": ["ingest"],
    "remote.RemoteStore.__init__": ["ingest", "import"],
    "brains._create": ["brains create"],
    "erasure.confirmed": ["erase", "brains delete"],
    "serve.cmd_serve": ["serve"],
    "serve.listen": ["serve"],
    "smoke": ["smoke"],
    "oauth_clients.cmd_oauth_clients": ["oauth-clients list"],
}
"""Which commands print the hints written in a function (or anywhere in a module)."""

DECLARATIONS = {"add_argument", "add_parser", "add_mutually_exclusive_group", "add_argument_group"}
QUOTED = re.compile(r"`cairn ([^`]*)`")
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def options(command: str) -> set[str]:
    parser = build_parser()
    for word in command.split():
        parser = subcommands(parser)[word]
    return {flag for action in parser._actions for flag in action.option_strings}


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def command_of(quoted: str) -> str:
    """The subcommand path a quoted `cairn …` starts with (`brains create NAME` → `brains create`)."""
    parser, path = build_parser(), []
    for word in quoted.split():
        found = subcommands(parser).get(word)
        if found is None:
            break
        parser, path = found, [*path, word]
    return " ".join(path)


def literals(path: Path) -> Iterator[tuple[str, str, int]]:
    """(function, text, line) for each string literal that is not a docstring or a declaration;
    an f-string's replacement fields read as `{}`."""
    tree = ast.parse(path.read_text())
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            skipped.add(id(first.value))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in DECLARATIONS:
            skipped.update(id(n) for n in ast.walk(node))

    def visit(node: ast.AST, where: list[str]) -> Iterator[tuple[str, str, int]]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            where = [*where, node.name]
        if id(node) in skipped:
            return
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            yield ".".join(where), str(text), node.lineno
            return
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield ".".join(where), node.value, node.lineno
            return
        for child in ast.iter_child_nodes(node):
            yield from visit(child, where)

    yield from visit(tree, [path.stem])


def printers(function: str) -> list[str] | None:
    parts = function.split(".")
    for n in range(len(parts), 0, -1):
        found = PRINTED_BY.get(".".join(parts[:n]))
        if found is not None:
            return found
    return None


def test_every_hint_names_only_flags_of_the_command_that_prints_it() -> None:
    problems: list[str] = []
    checked = 0
    for path in sorted(CLI.glob("*.py")):
        for function, text, line in literals(path):
            bare = FLAG.findall(QUOTED.sub("", text))
            if not bare:
                continue
            commands = printers(function)
            if commands is None:
                problems.append(f"{path.name}:{line} {function}: which commands print {text!r}? (PRINTED_BY)")
                continue
            for command in commands:
                checked += 1
                problems += [
                    f"{path.name}:{line} names {flag}, which `cairn {command}` does not have"
                    for flag in bare
                    if flag not in options(command)
                ]
    assert checked > 10  # the walk found the hints
    assert problems == []


def test_every_quoted_cairn_command_names_only_its_own_flags() -> None:
    problems: list[str] = []
    quoted = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        for _, text, line in literals(path):
            for span in QUOTED.findall(text):
                quoted += 1
                command = command_of(span)
                problems += [
                    f"{path.relative_to(PACKAGE)}:{line} `cairn {span}`: no {flag}"
                    for flag in FLAG.findall(span)
                    if flag not in options(command)
                ]
    assert quoted > 5
    assert problems == []


@pytest.mark.parametrize(
    ("hint", "command"),
    [
        ("no brain matches 'nope': create it with `cairn brains create nope` (or pass --create)", "search"),
        ("pick another with --prot PORT", "serve"),
    ],
)
def test_the_check_catches_a_flag_the_command_lacks(hint: str, command: str) -> None:
    assert set(FLAG.findall(QUOTED.sub("", hint))) - options(command)
