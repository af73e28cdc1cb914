"""The offline runs of the frameworks' steps: each step kind is a rule over the problem's Reading.

A step's result names the problem's own goals, constraints, numbers, phrases and parts; where the
input lacks what a step needs (no evidence, no people, no uncertainty), the result says so and
what to collect, rather than inventing it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from cairn.services.thoughtmcp.reasoning.decompose import domain_of
from cairn.services.thoughtmcp.reasoning.frameworks import Framework
from cairn.services.thoughtmcp.reasoning.rules import Reading, creative, critical, synthetic
from cairn.services.thoughtmcp.reasoning.text import lower_first, overlap, sentences, shorten, words, wordset

_PEOPLE: Final = wordset(
    "user users customer customers client clients team teams developer developers engineer engineers "
    "student students patient patients employee employees manager managers buyer buyers visitor "
    "visitors member members reader readers player players staff people stakeholders"
)
_LOOP_WORDS: Final = wordset(
    "feedback loop loops cycle cycles reinforce reinforces spiral vicious virtuous compounding "
    "increase increases decrease decreases more less grows shrinks"
)
_UNCERTAIN_WORDS: Final = wordset(
    "future uncertain uncertainty may might could forecast demand market trend trends risk risks "
    "depends unknown if scenario scenarios"
)


def run(framework: Framework, r: Reading) -> list[str]:
    """`Step name: result` for each of the framework's steps."""
    return [f"{name}: {_KINDS[kind](r)}" for name, kind in framework.steps]


def _define(r: Reading) -> str:
    out = f"{r.core}"
    if r.goals:
        out += f"; goal: {'; '.join(r.goals)}"
    if r.constraints:
        out += f"; limits: {'; '.join(r.constraints)}"
    return out


def _evidence(r: Reading) -> str:
    known = list(r.targets + r.facts) + [shorten(s, 80) for s in r.background[:2]]
    if known:
        return "Given: " + "; ".join(known)
    return f"Nothing measured is given: collect data on {r.phrase(0)} first"


def _hypotheses(r: Reading) -> str:
    aim = f"'{r.goals[0]}'" if r.goals else f"'{lower_first(r.core)}'"
    out = f"H1: {r.phrase(0)} drives {aim}"
    if len(r.phrases) > 1:
        out += f"; H2: {r.phrase(1)} does"
    if r.hedges:
        out += f"; H3 (the stated guess): {shorten(r.hedges[0][1], 80)}"
    return out


def _experiment(r: Reading) -> str:
    metric = r.metric or f"a number for {r.phrase(0)}"
    limits = f", staying within {r.constraints[0]}" if r.constraints else ""
    return f"Change {r.phrase(0)} alone and compare {metric} before and after{limits}"


def _measure(r: Reading) -> str:
    if r.metric:
        return f"Track {r.metric}; fix in advance the value that confirms or refutes each hypothesis"
    return f"No measure is stated: define a number for {r.phrase(0)} before running anything"


def _accept(r: Reading) -> str:
    metric = r.metric or "the measure"
    return f"Keep the hypothesis about {r.phrase(0)} only if {metric} moves as predicted; otherwise test H2"


def _users(r: Reading) -> str:
    text = " ".join([r.problem, *r.background, *r.goals])
    people = sorted({w for w in words(text) if w in _PEOPLE})
    if people:
        return f"People involved: {', '.join(people)}; learn what they need from '{lower_first(r.core)}'"
    return f"No person is named: find out who lives with the outcome of '{lower_first(r.core)}'"


def _ideas(r: Reading) -> str:
    return " | ".join(creative(r).insights[:2])


def _prototype(r: Reading) -> str:
    return f"Build the smallest version of '{r.main_part}' that someone can try"


def _user_test(r: Reading) -> str:
    aim = f"'{r.goals[0]}'" if r.goals else "what they need"
    return f"Put the prototype in front of the people affected and note where {aim} is not met"


def _components(r: Reading) -> str:
    if r.phrases:
        return "Components: " + ", ".join(r.phrases)
    return "No distinct components are named: list the parts the problem touches"


def _interactions(r: Reading) -> str:
    found = []
    for sentence in sentences(" ".join([r.problem, *r.background])):
        named = [p for p in r.phrases if p in sentence.lower()]
        if len(named) > 1:
            found.append(f"{named[0]} ↔ {named[1]}")
    if found:
        return "Linked in the text: " + "; ".join(dict.fromkeys(found))
    return f"No links are stated: check what {r.phrase(0)} depends on and what depends on it"


def _loops(r: Reading) -> str:
    text = " ".join([r.problem, *r.background])
    hits = [w for w in words(text) if w in _LOOP_WORDS]
    if hits:
        return f'Possible feedback ({", ".join(dict.fromkeys(hits))}): "{shorten(sentences(text)[0], 90)}"'
    return f"No feedback loop is stated; ask whether a change in {r.phrase(0)} comes back to change it again"


def _leverage(r: Reading) -> str:
    if not r.phrases:
        return f"Act where '{lower_first(r.core)}' is decided"
    texts = [*r.parts, *r.goals, *r.constraints, *r.background]
    best = max(r.phrases, key=lambda p: (sum(overlap(p, t) > 0 for t in texts), -r.phrases.index(p)))
    return f"Leverage point: {best}, which the most parts, goals and constraints touch"


def _claims(r: Reading) -> str:
    statements = [s for s in sentences(r.problem) if not s.endswith("?")]
    if statements:
        return "Claims: " + "; ".join(f'"{shorten(s, 80)}"' for s in statements[:2])
    return f"The problem asks rather than claims; the implicit claim is that '{lower_first(r.core)}' matters"


def _assumptions(r: Reading) -> str:
    found = [f'"{shorten(s, 70)}" ({cue})' for cue, s in r.hedges[:2]]
    if r.kind == "decision":
        found.append(f"that '{lower_first(r.core)}' would help")
    found += [f"that '{c}' cannot change" for c in r.constraints[:1]]
    return "Assumed: " + "; ".join(found) if found else "No assumption is stated openly; list what must hold"


def _weigh(r: Reading) -> str:
    support = list(r.evidence) + list(r.targets + r.facts)
    if support:
        return f"Support offered: {', '.join(support)}"
    return "No evidence is offered: every claim here is unsupported so far"


def _counter(r: Reading) -> str:
    questions = [q.removeprefix("Ask: ") for q in critical(r).insights if q.startswith("Ask: ")]
    return " ".join(questions[:2])


def _judge(r: Reading) -> str:
    risks = critical(r).risks
    if risks:
        return f"Not yet established: {risks[0]}"
    return "Supported as far as the problem states it"


def _combine(r: Reading) -> str:
    ideas = creative(r).insights
    combined = [i for i in ideas if i.startswith("Combine")]
    return combined[0] if combined else f"Merge the two strongest ideas: {shorten(ideas[0], 80)}"


def _plan(r: Reading) -> str:
    return synthetic(r).conclusion


def _symptom(r: Reading) -> str:
    when = f"; known: {shorten(r.background[0], 80)}" if r.background else ""
    return f"Symptom: {r.core}{when}"


# where problems of each domain (decompose.DOMAINS) most often come from
_USUAL_CAUSES: Final = {
    "database": "data growth, a schema or index change, a slow query, locking",
    "api": "a changed contract, a slow dependency, a spike in calls, an error in a recent release",
    "testing": "a flaky test, a changed environment, test data that drifted",
    "security": "a leaked credential, a missing permission check, an outdated dependency",
    "performance": "more load, a slow dependency, a resource at its limit, a recent release",
    "infrastructure": "a deployment, a configuration change, capacity, a failing host or network",
    "frontend": "a release that changed the flow, a device or browser difference, slow loading",
    "documentation": "outdated pages, missing steps, readers who were not the intended audience",
    "people": "workload, unclear ownership, a change in the team, missing training",
    "business": "price, product quality, the support experience, a competitor, a change in the market",
    "planning": "an estimate that was too low, scope that grew, a dependency that slipped",
    "research": "a biased sample, a confounding factor, measurement error",
    "design": "an assumption about users that does not hold, a coupling between parts",
}


def _causes(r: Reading) -> str:
    stated = [shorten(s, 70) for s in sentences(r.problem) if " because " in f" {s.lower()} "]
    areas = [p for p in r.phrases if overlap(p, r.core) < 1][:3] or [r.cause_area]
    out = "Candidate causes: a change in " + ", ".join(areas)
    usual = _USUAL_CAUSES.get(domain_of(r.problem, ""))
    if usual:
        out += f"; in problems like this, usually {usual}"
    if r.hedges:
        out += f'; the stated guess: "{shorten(r.hedges[0][1], 70)}"'
    if stated:
        out += f'; the stated cause: "{stated[0]}"'
    return out


def _whys(r: Reading) -> str:
    return (
        f"Ask why the symptom ('{lower_first(r.core)}') happens, starting from what changed in "
        f"{r.cause_area}, then why that changed, until the answer is something you can fix"
    )


def _verify(r: Reading) -> str:
    limit = f" without breaking '{r.constraints[0]}'" if r.constraints else ""
    return f"Remove the suspected cause{limit} and check that '{lower_first(r.core)}' stops"


def _fundamentals(r: Reading) -> str:
    facts = list(r.targets + r.facts) + list(r.constraints)
    if facts:
        return "What is certain: " + "; ".join(facts)
    return f"Nothing is quantified: establish the basic facts about {r.phrase(0)} first"


def _rebuild(r: Reading) -> str:
    return f"Rebuild '{lower_first(r.core)}' from those facts alone, then compare with the usual approach"


def _uncertainties(r: Reading) -> str:
    text = " ".join([r.problem, *r.background])
    hits = list(dict.fromkeys(w for w in words(text) if w in _UNCERTAIN_WORDS))
    drivers = ", ".join(r.phrases[:2]) or lower_first(r.core)
    if hits:
        return f"Uncertain ({', '.join(hits)}): how {drivers} will develop"
    return f"No uncertainty is named: assume {drivers} could move either way"


def _scenarios(r: Reading) -> str:
    goal = f"'{r.goals[0]}'" if r.goals else f"'{lower_first(r.core)}'"
    limit = f"'{r.constraints[0]}' binds" if r.constraints else "the main assumption fails"
    return f"Best: {goal} is reached early; worst: {limit} and progress stalls; likely: partial progress"


def _robust(r: Reading) -> str:
    return f"Moves that help in every scenario: '{r.main_part}', and keeping options open on {r.phrase(0)}"


def _signposts(r: Reading) -> str:
    metric = r.metric or f"a number for {r.phrase(0)}"
    return f"Watch {metric} to tell which scenario is unfolding"


_KINDS: Final[dict[str, Callable[[Reading], str]]] = {
    "define": _define,
    "evidence": _evidence,
    "hypotheses": _hypotheses,
    "experiment": _experiment,
    "measure": _measure,
    "accept": _accept,
    "users": _users,
    "ideas": _ideas,
    "prototype": _prototype,
    "user_test": _user_test,
    "components": _components,
    "interactions": _interactions,
    "loops": _loops,
    "leverage": _leverage,
    "claims": _claims,
    "assumptions": _assumptions,
    "weigh": _weigh,
    "counter": _counter,
    "judge": _judge,
    "combine": _combine,
    "plan": _plan,
    "symptom": _symptom,
    "causes": _causes,
    "whys": _whys,
    "verify": _verify,
    "fundamentals": _fundamentals,
    "rebuild": _rebuild,
    "uncertainties": _uncertainties,
    "scenarios": _scenarios,
    "robust": _robust,
    "signposts": _signposts,
}
