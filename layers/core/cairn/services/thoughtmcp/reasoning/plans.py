"""Stages of work for a problem its own wording does not split (breakdown without a model).

"Build a scalable web application" has no clause to cut, yet anyone asked to break it down
names the same parts: design it, build its core, set up where it runs. The problem's leading
verb says which kind of work it is; each kind has its stages, each stage one or more steps that
can run side by side, and every step of a stage comes after every step of the stage before.

The first step names the problem's own object ("Measure the p95 latency of our checkout API as it
is now"), the later ones refer back to it ("Find what limits it most"), as a person would write
the list; each sub-problem's parent is the problem, so none is read without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from cairn.services.thoughtmcp.reasoning.text import wordset

# the words a question or request opens with before its verb
_LEAD: Final = re.compile(
    r"^(?:(?:how|what)\s+(?:should|can|could|do|would|might|will)\s+(?:we|i|you|the team|one)\s+"
    r"(?:best\s+)?|(?:we|i)\s+(?:need|want|have|plan|would like)\s+to\s+|help\s+(?:me|us)\s+(?:to\s+)?|"
    r"(?:please\s+)?(?:let'?s\s+)?)",
    re.I,
)
_DECIDE_LEAD: Final = re.compile(
    r"^(?:should\s+(?:we|i|the team)"
    r"|(?:we|i)\s+(?:must|need to)\s+(?:decide|choose)\s+(?:whether\s+to|between)"
    r"|whether\s+(?:to|we\s+should))\s+",
    re.I,
)


@dataclass(frozen=True)
class Kind:
    name: str
    verbs: frozenset[str]
    # step patterns: {x} is the problem's object, {head} the object before "to"/"from", {verb} the verb
    stages: tuple[tuple[str, ...], ...]


KINDS: Final[tuple[Kind, ...]] = (
    Kind(
        "build",
        wordset("build create develop make implement design write set establish introduce add"),
        (
            ("Design the architecture of {x}",),
            ("Implement its core features", "Set up the infrastructure that runs it"),
        ),
    ),
    Kind(
        "launch",
        wordset("launch ship release roll deliver publish open start"),
        (
            ("Define what {x} must do at launch",),
            ("Build the features it needs at launch", "Set up the infrastructure it runs on"),
            ("Test it end to end",),
            ("Launch it and watch its first users",),
        ),
    ),
    Kind(
        "improve",
        wordset(
            "reduce improve optimize optimise increase speed cut lower raise boost grow minimize maximize "
            "decrease shorten stabilize stabilise scale"
        ),
        (
            ("Measure {x} as it is now",),
            ("Find what limits it most",),
            ("Change what limits it most",),
            ("Verify the change against the target",),
        ),
    ),
    Kind(
        "fix",
        wordset("fix debug resolve troubleshoot repair investigate diagnose solve stop prevent"),
        (
            ("Reproduce the problem with {x}",),
            ("Find the root cause of the problem",),
            ("Fix the root cause",),
            ("Verify the fix and guard against a recurrence",),
        ),
    ),
    Kind(
        "migrate",
        wordset("migrate move upgrade switch replace port convert transition refactor consolidate"),
        (
            ("Inventory what depends on {head}",),
            ("Plan the stages of the work to {verb} {x}",),
            ("Carry out the first stage and verify it",),
            ("Complete the remaining stages and retire what is replaced",),
        ),
    ),
)
_DECIDE: Final = Kind(
    "decide",
    frozenset(),
    (
        ("Define the criteria for deciding whether to {x}",),
        ("List the options and what each would cost",),
        ("Weigh the options against the criteria",),
        ("Decide, and name the first step",),
    ),
)
_EXPLAIN: Final = Kind(
    "explain",
    frozenset(),
    (
        ('Collect the facts behind the question "{x}"',),
        ("List the causes that could explain it",),
        ("Test each cause against the facts",),
        ("Confirm the root cause and decide what to change",),
    ),
)
_WHY: Final = re.compile(r"^why\b", re.I)
_DETERMINER: Final = re.compile(r"^(?:a|an)\s+", re.I)


@dataclass(frozen=True)
class Plan:
    kind: str
    stages: tuple[tuple[str, ...], ...]  # steps, as sentences about this problem


def plan_for(problem: str) -> Plan | None:
    """The stages of work for `problem`, or None when its wording names no kind of work known here."""
    text = " ".join(problem.split()).strip().rstrip("?.!").strip()
    if not text:
        return None
    decided = _DECIDE_LEAD.match(text)
    if decided:
        return _fill(_DECIDE, text[decided.end() :], "")
    if _WHY.match(text):
        return _fill(_EXPLAIN, " ".join(problem.split()).strip(), "")
    lead = _LEAD.match(text)
    rest = text[lead.end() :] if lead else text
    head, _, tail = rest.partition(" ")
    verb = head.lower()
    if verb in {"set", "roll", "speed", "scale"} and tail.lower().startswith(("up ", "out ", "down ")):
        tail = tail.split(" ", 1)[1] if " " in tail else ""
    for kind in KINDS:
        if verb in kind.verbs and tail:
            return _fill(kind, _object(tail), verb)
    return None


def _object(phrase: str) -> str:
    """The object as it reads inside a sentence: "a mobile app" becomes "the mobile app"."""
    return _DETERMINER.sub("the ", phrase.strip())


def _fill(kind: Kind, obj: str, verb: str) -> Plan | None:
    if not obj.strip():
        return None
    head = re.split(r"\s+(?:to|onto|into|from|with)\s+", obj, maxsplit=1)[0]
    stages = tuple(tuple(step.format(x=obj, head=head, verb=verb) for step in stage) for stage in kind.stages)
    return Plan(kind.name, stages)
