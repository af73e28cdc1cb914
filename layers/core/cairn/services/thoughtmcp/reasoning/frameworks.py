"""The eight thinking frameworks of `analyze`, and their selection by the problem's features.

Selection is deterministic: each framework lists cue words and phrases; a cue counts once when the
problem (or the context's background) uses it — a phrase (two words or more) scores 2, a word 1; a
word cue matches its plural, and one of five letters or more every word it starts ("measur"
matches "measurement"). The highest score wins, ties in the table's order; with no cue at all the choice is
first principles, which needs nothing but what the problem states, at a low confidence.

    confidence = min(0.95, 0.4 + 0.1 * min(best, 4) + 0.15 * (best - second) / best)

The selection is a hybrid when the runner-up scores at least 3/4 of the best. Alternatives are the
other frameworks that scored, best first, topped up to two from the winner's usual companion,
then the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cairn.services.thoughtmcp.reasoning.text import words


@dataclass(frozen=True)
class Framework:
    id: str
    name: str
    description: str
    fits: str  # the problem features it suits
    cues: tuple[str, ...]
    steps: tuple[tuple[str, str], ...]  # (step name, rule kind run by rules.framework_step)
    companions: tuple[tuple[str, str], ...]  # (framework id, why it is a useful alternative)


FRAMEWORKS: Final[tuple[Framework, ...]] = (
    Framework(
        "scientific-method",
        "Scientific Method",
        "Form hypotheses, test them with experiments, and let measurements decide",
        "hypothesis testing, empirical questions, anything that can be measured",
        (
            "hypothes",
            "experiment",
            "measur",
            "test whether",
            "a/b test",
            "evidence that",
            "data",
            "metric",
            "empirical",
        ),
        (
            ("Observe", "evidence"),
            ("Form hypotheses", "hypotheses"),
            ("Design the experiment", "experiment"),
            ("Measure", "measure"),
            ("Conclude", "accept"),
        ),
        (("critical-thinking", "Checks the reasoning behind the hypotheses"),),
    ),
    Framework(
        "design-thinking",
        "Design Thinking",
        "Understand the people involved, then ideate, prototype and test with them",
        "user-centred problems, products, experiences, innovation",
        (
            "user",
            "customer",
            "experience",
            "design",
            "usability",
            "persona",
            "empathy",
            "onboarding",
            "interface",
        ),
        (
            ("Empathize", "users"),
            ("Define", "define"),
            ("Ideate", "ideas"),
            ("Prototype", "prototype"),
            ("Test", "user_test"),
        ),
        (("creative-problem-solving", "Widens the range of ideas to prototype"),),
    ),
    Framework(
        "systems-thinking",
        "Systems Thinking",
        "Map the parts, their interactions and feedback loops, and act on leverage points",
        "complex, interconnected systems with feedback",
        (
            "feedback",
            "interdepend",
            "ecosystem",
            "loop",
            "interconnect",
            "system-wide",
            "ripple",
            "side effect",
            "dynamics",
            "network effect",
        ),
        (
            ("Map the components", "components"),
            ("Trace the interactions", "interactions"),
            ("Find feedback loops", "loops"),
            ("Find leverage points", "leverage"),
        ),
        (("scenario-planning", "Tests the system against different futures"),),
    ),
    Framework(
        "critical-thinking",
        "Critical Thinking",
        "Identify the claims, surface assumptions, weigh the evidence and the counterarguments",
        "evaluating arguments, claims and decisions",
        (
            "argument",
            "claim",
            "evaluat",
            "evidence",
            "justif",
            "assess",
            "convinc",
            "valid",
            "is it true",
            "pros and cons",
            "trade-off",
            "tradeoff",
            "worth it",
        ),
        (
            ("Identify the claims", "claims"),
            ("Surface assumptions", "assumptions"),
            ("Weigh the evidence", "weigh"),
            ("Consider counterarguments", "counter"),
            ("Judge", "judge"),
        ),
        (("first-principles", "Rebuilds the argument from basic facts"),),
    ),
    Framework(
        "creative-problem-solving",
        "Creative Problem Solving",
        "Clarify the challenge, generate many ideas, combine them and plan the best",
        "novel solutions, brainstorming, stuck problems",
        (
            "idea",
            "brainstorm",
            "novel",
            "innovat",
            "creativ",
            "new way",
            "out of the box",
            "reinvent",
            "alternative",
        ),
        (
            ("Clarify the challenge", "define"),
            ("Generate ideas", "ideas"),
            ("Combine and refine", "combine"),
            ("Plan the best idea", "plan"),
        ),
        (("design-thinking", "Grounds the ideas in what people need"),),
    ),
    Framework(
        "root-cause-analysis",
        "Root Cause Analysis",
        "Trace a failure from its symptom to the underlying cause, and verify it",
        "debugging, failures, incidents, recurring problems",
        (
            "bug",
            "bugs",
            "fail",
            "failure",
            "failing",
            "failed",
            "outage",
            "crash",
            "error",
            "broken",
            "incident",
            "regression",
            "intermittent",
            "root cause",
            "why did",
            "why does",
            "why is",
            "why are",
            "keeps happening",
        ),
        (
            ("Define the problem", "symptom"),
            ("Collect data", "evidence"),
            ("Identify possible causes", "causes"),
            ("Ask why", "whys"),
            ("Verify the root cause", "verify"),
        ),
        (("systems-thinking", "Could reveal systemic causes behind the failure"),),
    ),
    Framework(
        "first-principles",
        "First Principles",
        "Reduce the problem to fundamental truths and rebuild a solution from them",
        "fundamental understanding, questioning assumptions, starting fresh",
        (
            "fundamental",
            "from scratch",
            "assumption",
            "first principles",
            "basic",
            "essential",
            "ground up",
            "rethink",
        ),
        (
            ("State the goal", "define"),
            ("List the assumptions", "assumptions"),
            ("Reduce to fundamentals", "fundamentals"),
            ("Rebuild from them", "rebuild"),
        ),
        (("critical-thinking", "Tests the assumptions that first principles sets aside"),),
    ),
    Framework(
        "scenario-planning",
        "Scenario Planning",
        "Imagine several plausible futures and choose moves that hold up in all of them",
        "planning under uncertainty, forecasts, long horizons",
        (
            "future",
            "forecast",
            "uncertain",
            "scenario",
            "plan for",
            "what if",
            "long-term",
            "long term",
            "next year",
            "trend",
            "predict",
            "roadmap",
        ),
        (
            ("Name the focal question", "define"),
            ("Find the driving uncertainties", "uncertainties"),
            ("Sketch scenarios", "scenarios"),
            ("Choose robust moves", "robust"),
            ("Set signposts", "signposts"),
        ),
        (("systems-thinking", "Explains which forces drive the scenarios"),),
    ),
)
BY_ID: Final = {f.id: f for f in FRAMEWORKS}
DEFAULT: Final = "first-principles"
HYBRID_RATIO: Final = 0.75


@dataclass(frozen=True)
class Selection:
    framework: Framework
    confidence: float
    reason: str
    hybrid: tuple[str, ...]  # the close frameworks, the selected one first; () when not a hybrid
    alternatives: tuple[tuple[Framework, str], ...]
    matched: dict[str, tuple[str, ...]]  # framework id -> the cues it matched


def matches(framework: Framework, text: str) -> tuple[str, ...]:
    tokens = words(text)
    joined = " " + " ".join(tokens) + " "
    found: list[str] = []
    for cue in framework.cues:
        cue_words = words(cue)
        if len(cue_words) > 1:
            hit = " " + " ".join(cue_words) + " " in joined
        else:
            hit = any(t in (cue, cue + "s") or (len(cue) >= 5 and t.startswith(cue)) for t in tokens)
        if hit:
            found.append(cue)
    return tuple(found)


def score(cues: tuple[str, ...]) -> int:
    return sum(2 if len(words(c)) > 1 else 1 for c in cues)


def select(text: str, preferred: str | None = None) -> Selection:
    """The framework for `text` (see the module docstring); `preferred`, when it names one of the
    eight, is honoured and the rules' own choice becomes its first alternative."""
    matched = {f.id: matches(f, text) for f in FRAMEWORKS}
    ranked = sorted(FRAMEWORKS, key=lambda f: -score(matched[f.id]))  # stable: table order breaks ties
    best = score(matched[ranked[0].id])
    second = score(matched[ranked[1].id])
    if best == 0:
        chosen, confidence = BY_ID[DEFAULT], 0.3
        reason = "No framework's cue words appear; first principles needs only what the problem states"
    else:
        chosen = ranked[0]
        confidence = round(min(0.95, 0.4 + 0.1 * min(best, 4) + 0.15 * (best - second) / best), 2)
        reason = f"Matched {', '.join(repr(c) for c in matched[chosen.id])}: suited to {chosen.fits}"
    hybrid: tuple[str, ...] = ()
    if best > 0 and second > 0 and second >= HYBRID_RATIO * best:
        hybrid = (ranked[0].id, ranked[1].id)
    if preferred is not None and preferred in BY_ID and preferred != chosen.id:
        rules_choice = chosen
        chosen, confidence, hybrid = BY_ID[preferred], 1.0, ()
        reason = f"Requested as the preferred framework (the rules would have chosen {rules_choice.name})"
    elif preferred is not None and preferred == chosen.id:
        confidence, reason = 1.0, f"Requested as the preferred framework; the rules agree ({reason})"
    alternatives = _alternatives(chosen, ranked, matched)
    return Selection(chosen, confidence, reason, hybrid, alternatives, matched)


def _alternatives(
    chosen: Framework, ranked: list[Framework], matched: dict[str, tuple[str, ...]]
) -> tuple[tuple[Framework, str], ...]:
    out: list[tuple[Framework, str]] = []
    for framework in ranked:
        if framework is chosen or not matched[framework.id]:
            continue
        cues = ", ".join(repr(c) for c in matched[framework.id])
        out.append((framework, f"Also matched {cues}"))
        if len(out) == 2:
            return tuple(out)
    fillers = [(BY_ID[i], why) for i, why in chosen.companions]
    fillers += [(f, f"Suited to {f.fits}") for f in FRAMEWORKS]
    for framework, why in fillers:
        if len(out) == 2:
            break
        if framework is not chosen and all(f is not framework for f, _ in out):
            out.append((framework, why))
    return tuple(out)
