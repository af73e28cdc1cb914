"""The offline reasoning engine: deterministic rules over the problem's own words.

`read` turns a problem and its context into a `Reading` (what it asks, its parts, goals,
constraints, quantities, key phrases, hedged and absolute claims); each think mode is a function
of the reading that returns a `StreamOutput`. Nothing here knows anything the problem does not
say: the rules reorganise and question the input, they do not bring domain knowledge.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from cairn.domain.js_text import js_blank, js_trim
from cairn.services.thoughtmcp.reasoning.decompose import decompose
from cairn.services.thoughtmcp.reasoning.text import (
    ABSOLUTES,
    ACTION_VERBS,
    EVIDENCE_CUES,
    HEDGES,
    TermIndex,
    and_list,
    clean,
    content_words,
    counted,
    cues,
    key_phrases,
    lower_first,
    overlap,
    quantities,
    quoted_list,
    sentence_with,
    sentences,
    shared,
    shorten,
    term_set,
    unique,
    wordset,
)

STREAMS: Final = ("analytical", "creative", "critical", "synthetic")
MAX_STEPS_LISTED: Final = 25  # the steps a synthetic insight names for one goal
MAX_GOAL_SHOWN: Final = 200  # the characters of a goal a plan step shows

_STEMS: Final[tuple[tuple[str, str], ...]] = (
    (r"how (?:can|do|should|could|would|might|will) (?:we|i|you|one|they)\s+", "how"),
    (r"how to\s+", "how"),
    (r"why (?:is|are|does|do|did|was|were|has|have)\s+", "why"),
    (r"(?:should|shall|must) (?:we|i|they)\s+", "decision"),
    (r"(?:is it worth|is it better to|whether (?:or not )?to|do we need to)\s+", "decision"),
    (r"what (?:is|are) the best way to\s+", "how"),
    (r"what (?:is|are|should|would)\s+", "what"),
    (r"(?:which|can|could) (?:we|i)?\s*", "what"),
)
_KIND_LABEL: Final = {
    "how": "question of method",
    "why": "question of cause",
    "decision": "decision",
    "what": "question of definition or choice",
    "task": "task",
}
_GOAL_CUES: Final = re.compile(
    r"\b(?:so that|in order to|so as to|aim(?:ing)? to|goal is to|want to|need to|so we can)\s+([^,.;?!]+)",
    re.I,
)
_CONSTRAINT_CUES: Final = re.compile(
    r"\b(?:without|must not|cannot|can't|no more than|at most|at least|within|limited to|on a budget of|"
    r"before the deadline|by the end of)\b[^,.;?!]*",
    re.I,
)

# a remembered decision or rule that binds the answer ("The team decided not to buy new hardware")
_REMEMBERED_RULE: Final = re.compile(
    r"\b(?:decided|agreed|chose|committed|policy|must|must not|never|always|only|not allowed|forbidden|"
    r"cannot|can't|no longer)\b",
    re.I,
)


@dataclass(frozen=True)
class Reading:
    problem: str
    core: str  # what is asked, without its question words
    kind: str  # how | why | decision | what | task
    parts: tuple[str, ...]  # the problem's top-level pieces, in execution order
    steps: tuple[str, ...]  # the parts that are actions (not questions, not statements)
    prerequisites: tuple[tuple[str, str], ...]  # (earlier part, later part)
    goals: tuple[str, ...]
    constraints: tuple[str, ...]
    background: tuple[str, ...]  # sentences of the context's background and of the memories
    targets: tuple[str, ...]  # quantities of the problem and its goals: what success is measured in
    facts: tuple[str, ...]  # quantities of the background, the constraints and the memories
    phrases: tuple[str, ...]
    hedges: tuple[tuple[str, str], ...]  # (cue, the sentence using it)
    absolutes: tuple[tuple[str, str], ...]
    evidence: tuple[str, ...]
    memories: int

    @property
    def specification(self) -> float:
        """How much the input specifies (0..1): goals, constraints, background, numbers, detail."""
        detail = len(self.parts) > 1 or len(self.phrases) >= 3
        return (
            0.25 * bool(self.goals)
            + 0.2 * bool(self.constraints)
            + 0.2 * bool(self.background)
            + 0.15 * bool(self.targets or self.facts)
            + 0.1 * detail
            + 0.1 * bool(self.memories)
        )

    @property
    def base_confidence(self) -> float:
        return 0.3 + 0.6 * self.specification

    @property
    def main_part(self) -> str:
        """The part that carries the most of the goals' and key phrases' words (earliest on ties)."""
        candidates = self.steps
        if len(candidates) < 2:
            return self.core
        aims, key = term_set(" ".join(self.goals) or self.core), term_set(" ".join(self.phrases[:3]))

        def weight(part: str) -> float:
            terms = term_set(part)
            return 2 * shared(terms, aims) + shared(terms, key)

        return max(enumerate(candidates), key=lambda item: (weight(item[1]), -item[0]))[1]

    @property
    def metric(self) -> str | None:
        """What success is measured by: a goal holding a number, a number of the problem, the
        first goal; None when the input names none of them."""
        for goal in self.goals:
            if quantities(goal):
                return f"'{goal}'"
        if self.targets:
            return self.targets[0]
        return f"'{self.goals[0]}'" if self.goals else None

    @property
    def cause_area(self) -> str:
        """A key phrase other than the problem's own core (where a cause may lie)."""
        for phrase in self.phrases:
            if overlap(phrase, self.core) < 1:
                return phrase
        nouns = [w for w in content_words(self.core) if w not in ACTION_VERBS]
        return f"the {nouns[0]}" if nouns else "its surroundings"

    def phrase(self, index: int) -> str:
        if index < len(self.phrases):
            return self.phrases[index]
        return self.phrases[0] if self.phrases else lower_first(self.core)


@dataclass
class StreamOutput:
    conclusion: str
    reasoning: list[str]
    insights: list[str]
    recommendations: list[str]
    risks: list[str] = field(default_factory=list)
    confidence: float = 0.5


def read(
    problem: str,
    *,
    background: str | None = None,
    goals: Sequence[str] = (),
    constraints: Sequence[str] = (),
    memories: Sequence[str] = (),
) -> Reading:
    text = " ".join(problem.split())
    core, kind = _core(text)
    questions = {clean(s) for s in sentences(text) if s.rstrip().endswith("?")}
    tree = decompose(text, max_depth=2)
    children = [n for n in tree.nodes if n.depth == 2]
    order = {node_id: i for i, node_id in enumerate(tree.order)}
    parts = tuple(n.text for n in sorted(children, key=lambda n: order[n.id]))
    by_id = {n.id: n.text for n in children}
    prerequisites = tuple(
        (by_id[e.source], by_id[e.target]) for e in tree.edges if e.source in by_id and e.target in by_id
    )
    stated_goals = [js_trim(g) for g in goals if not js_blank(g)]
    stated_constraints = [js_trim(c) for c in constraints if not js_blank(c)]
    found_goals = [clean(m.group(1)) for m in _GOAL_CUES.finditer(text)]
    found_constraints = [clean(m.group(0)) for m in _CONSTRAINT_CUES.finditer(text)]
    told = [s for s in sentences(background or "")] + [s for m in memories for s in sentences(m)]
    remembered = [
        f"{shorten(clean(s), 120)} (remembered)"
        for m in memories
        for s in sentences(m)
        if _REMEMBERED_RULE.search(s)
    ]
    everything = " ".join([text, *told])
    return Reading(
        problem=text,
        core=core,
        kind=kind,
        parts=parts if len(parts) > 1 else (core,),
        steps=tuple(p for p in parts if p not in questions and not _statement(p)),
        prerequisites=prerequisites,
        goals=unique(stated_goals + found_goals),
        constraints=unique(stated_constraints + found_constraints + remembered),
        background=tuple(told),
        targets=tuple(quantities(" ".join([text, *stated_goals]))),
        facts=tuple(quantities(" ".join([*stated_constraints, *told]))),
        phrases=tuple(key_phrases(text, 5)),
        hedges=_by_sentence(everything, HEDGES),
        absolutes=_by_sentence(everything, ABSOLUTES),
        evidence=tuple(cues(everything, EVIDENCE_CUES)),
        memories=len(memories),
    )


def think(reading: Reading, mode: str) -> StreamOutput:
    return _MODES[mode](reading)


def analytical(r: Reading) -> StreamOutput:
    main = r.main_part
    reasoning = [f"Read the problem as a {_KIND_LABEL[r.kind]}: {r.core}"]
    if len(r.parts) > 1:
        reasoning.append(f"Split it into {len(r.parts)} parts: " + "; ".join(r.parts))
    else:
        reasoning.append("The statement is a single part; it has no clauses to split")
    reasoning.append(f"Targets stated: {', '.join(r.targets)}" if r.targets else "No target number is stated")
    if r.facts:
        reasoning.append(f"Facts in numbers: {', '.join(r.facts)}")
    reasoning.append(
        f"Constraints: {'; '.join(r.constraints)}" if r.constraints else "No constraint is stated"
    )
    reasoning.append(
        f"Goals: {'; '.join(r.goals)}"
        if r.goals
        else f"No explicit goal; taking '{r.core}' itself as the goal"
    )
    reasoning.append(f"Main part: '{main}', the one that carries most of the goals' and key terms' words")

    quoted = [f"'{p}'" for p in r.phrases[:3]]
    insights = [f"The problem turns on {and_list(quoted) or repr(r.core)}"]
    if r.metric:
        insights.append(f"Success can be measured by {r.metric}")
    else:
        insights.append(
            f"No measurable target is given: state one for '{r.phrase(0)}' before comparing options"
        )
    if r.constraints:
        verb = "narrows" if len(r.constraints) == 1 else "narrow"
        insights.append(
            f"{counted(len(r.constraints), 'constraint')} {verb} the options: {'; '.join(r.constraints)}"
        )
    for earlier, later in r.prerequisites[:2]:
        insights.append(f"'{earlier}' has to come before '{later}'")
    if r.background:
        insights.append(f"Known starting point: {shorten(r.background[0], 120)}")

    conclusion = f"Work on '{main}' first"
    if r.kind == "why":
        conclusion = f"Explain '{r.core}' by establishing when it happens and what changed in {r.cause_area}"
        if r.hedges:
            conclusion += f'; test the stated guess ("{shorten(r.hedges[0][1], 80)}") first'
    if r.constraints:
        conclusion += f", within {quoted_list(r.constraints[:2])}"
    conclusion += f", and judge the result by {r.metric}." if r.metric else "."
    return StreamOutput(
        conclusion=conclusion,
        reasoning=reasoning,
        insights=insights,
        recommendations=[f"Start with '{main}'" + (f" and judge it by {r.metric}" if r.metric else "")],
        confidence=_clamp(r.base_confidence),
    )


def creative(r: Reading) -> StreamOutput:
    ideas: list[tuple[str, str]] = []  # (technique, idea)
    for constraint in r.constraints[:2]:
        ideas.append(
            (
                f"removed the constraint '{constraint}'",
                f"Drop '{constraint}' for a moment: design the ideal answer to '{r.core}', "
                f"then keep as much of it as survives with the constraint back",
            )
        )
    if len(r.steps) > 1:
        ideas.append(
            (
                "combined two parts",
                f"Combine '{r.steps[0]}' and '{r.steps[1]}': look for one change that settles both",
            )
        )
    elif len(r.phrases) > 1:
        ideas.append(
            (
                "combined two key terms",
                f"Combine {r.phrases[0]} with {r.phrases[1]}: can one solve the other?",
            )
        )
    if r.kind == "decision":
        inverted = (
            f"Invert it: what would have to be true for not doing it ('{r.core}') to be the better choice?"
        )
    else:
        inverted = (
            f"Invert it: what would make '{lower_first(r.core)}' fail or get worse? "
            "Each answer, avoided, is a candidate approach"
        )
    ideas.append(("inverted the problem", inverted))
    if r.targets or r.facts:
        ideas.append(
            (
                "changed the scale",
                f"Change the scale: what would change if '{(r.targets + r.facts)[0]}' were ten times larger, "
                "or ten times smaller?",
            )
        )
    if len(r.steps) > 1:
        ideas.append(
            (
                "reversed the order",
                f"Reverse the order: start from '{r.steps[-1]}' "
                f"and see what '{r.steps[0]}' must then provide",
            )
        )
    ideas.append(
        (
            "borrowed an approach",
            f"Borrow: find a team that has already solved a problem like '{r.phrase(0)}' "
            "and reuse its approach",
        )
    )
    best = ideas[0][1]
    return StreamOutput(
        conclusion=f"Most promising reframing: {best}.",
        reasoning=[f"Reframed the problem: {technique}" for technique, _ in ideas],
        insights=[idea for _, idea in ideas],
        recommendations=[best],
        confidence=_clamp(r.base_confidence - 0.05),
    )


def critical(r: Reading) -> StreamOutput:
    risks: list[str] = []
    for cue, sentence in r.hedges[:2]:
        risks.append(f"'{cue}' marks a guess: \"{shorten(sentence, 100)}\" is assumed, not shown")
    for cue, sentence in r.absolutes[:2]:
        risks.append(
            f"'{cue}' is an absolute claim (\"{shorten(sentence, 100)}\"); one counterexample breaks it"
        )
    if r.kind == "decision":
        risks.append(f"The question presumes that '{lower_first(r.core)}' would help; its cost is not stated")
    if r.metric is None:
        risks.append(
            f"No measurable target is given, so success at '{lower_first(r.core)}' cannot be checked"
        )
    if not r.background:
        risks.append(f"No background is given: the current state of {r.phrase(0)} is unknown")
    if r.goals and r.constraints:
        risks.append(f"'{r.goals[0]}' may not be reachable under '{r.constraints[0]}'")
    if not r.evidence and not r.facts and r.background:
        risks.append("The background states facts without sources or measurements")

    questions = [_FIRST_QUESTION[r.kind].format(core=lower_first(r.core))]
    questions += [f'How would you check "{shorten(sentence, 60)}"?' for _, sentence in r.hedges[:1]]
    questions.append(f"What happens if '{r.main_part}' fails or takes twice as long?")
    questions += [f"Is '{c}' a hard limit or a preference?" for c in r.constraints[:1]]
    questions.append(f"Which result would show that the approach to '{lower_first(r.core)}' is wrong?")

    reasoning = [
        f"Checked for hedged claims: {and_list([repr(c) for c, _ in r.hedges]) or 'none'}",
        f"Checked for absolute claims: {and_list([repr(c) for c, _ in r.absolutes]) or 'none'}",
        f"Checked for measurements: {', '.join(r.targets + r.facts) or 'none'}",
        "Checked goals against constraints: "
        + ("one tension" if r.goals and r.constraints else "nothing to compare"),
    ] + [f"Counter-question: {q}" for q in questions]
    if risks:
        conclusion = f'Weakest point: {risks[0]}. Answer "{questions[0]}" before acting.'
    else:
        conclusion = (
            "No unsupported or absolute claim found in the problem as stated; "
            f'still answer "{questions[0]}" before acting.'
        )
    return StreamOutput(
        conclusion=conclusion,
        reasoning=reasoning,
        insights=risks + [f"Ask: {q}" for q in questions[:2]],
        recommendations=[f"Before committing, answer: {questions[0]}"],
        risks=risks,
        confidence=_clamp(r.base_confidence - 0.05 * min(len(risks), 4)),
    )


def synthetic(r: Reading) -> StreamOutput:
    steps = list(r.steps) if len(r.steps) > 1 else _template_plan(r)
    step_terms = [term_set(s) for s in steps]
    by_step, by_goal = TermIndex(step_terms), TermIndex([term_set(g) for g in r.goals])
    served = {g: [n + 1 for n in by_step.sharing(term_set(g), MAX_STEPS_LISTED + 1)] for g in r.goals}
    shown = [g if len(g) <= MAX_GOAL_SHOWN else shorten(g, MAX_GOAL_SHOWN) for g in r.goals]  # in each step
    plan = []
    for i, (step, terms) in enumerate(zip(steps, step_terms, strict=True), 1):
        goal = next((shown[k] for k in by_goal.sharing(terms, 1)), "")
        plan.append(f"{i}. {step}" + (f" (serves '{goal}')" if goal else ""))
    insights: list[str] = []
    for goal, numbers in served.items():
        if numbers:
            listed = [str(n) for n in numbers[:MAX_STEPS_LISTED]]
            listed += ["later ones"] if len(numbers) > MAX_STEPS_LISTED else []
            insights.append(f"'{goal}' is served by step {and_list(listed)}")
        else:
            insights.append(f"No step addresses '{goal}' yet: add one")
    if r.constraints:
        insights.append(f"Every step must respect {quoted_list(r.constraints)}")
    if r.background:
        insights.append(f"The plan builds on: {shorten(r.background[0], 120)}")
    if not insights:
        insights.append(
            f"With no goals or constraints given, the plan follows the problem's own order: {steps[0]}"
        )
    conclusion = "Plan: " + ", then ".join(lower_first(s) if i else s for i, s in enumerate(steps))
    if r.goals:
        conclusion += f" — toward {quoted_list(r.goals[:2])}"
    if r.constraints:
        conclusion += f", keeping {quoted_list(r.constraints[:2])}"
    uncovered = [g for g, numbers in served.items() if not numbers]
    return StreamOutput(
        conclusion=conclusion + ".",
        reasoning=["Ordered the parts by their dependencies", *plan],
        insights=insights,
        recommendations=[conclusion],
        confidence=_clamp(r.base_confidence - 0.05 * min(len(uncovered), 2)),
    )


def _template_plan(r: Reading) -> list[str]:
    """A three-step plan around the problem's core when it does not list its own steps."""
    if r.kind == "why":
        guess = f', testing the stated guess "{shorten(r.hedges[0][1], 60)}" first' if r.hedges else ""
        return [
            f"Confirm when '{lower_first(r.core)}' happens and how often",
            f"Find what changed in {r.cause_area}{guess}",
            "Remove the cause and check that the problem stops",
        ]
    if r.kind == "decision":
        return [
            f"Write down what '{lower_first(r.core)}' must achieve",
            "Compare doing it with not doing it: cost, risk and the constraints",
            "Decide, and name the signal that would reverse the decision",
        ]
    return [
        f"Fix how success will be measured (by {r.metric or 'a number you can check'})",
        r.core,
        f"Check the result against {quoted_list(r.goals[:2]) or r.metric or 'that number'}",
    ]


def _statement(part: str) -> bool:
    """A part that states something ("I think it is the cache") rather than asks for an action."""
    tokens = part.lower().split()
    return bool(tokens) and tokens[0] in _SUBJECTS and any(t in _STATING_VERBS for t in tokens[1:4])


_SUBJECTS: Final = wordset("i we it this that there they he she you our my their the")
_STATING_VERBS: Final = wordset(
    "is are was were has have had seems seem think believe guess feel looks appears will would"
)
_FIRST_QUESTION: Final = {
    "how": "What evidence shows that '{core}' is the right problem to solve?",
    "why": "What evidence shows that '{core}' really happens, and since when?",
    "decision": "What evidence shows that '{core}' would pay off?",
    "what": "What would a good answer to '{core}' let you do?",
    "task": "What does done look like for '{core}'?",
}
_MODES: Final = {"analytical": analytical, "creative": creative, "critical": critical, "synthetic": synthetic}


def _core(text: str) -> tuple[str, str]:
    """What is asked (the first question, else the first sentence) without its question words."""
    found = sentences(text)
    asked = [q for q in found if q.endswith("?")]
    body = (asked or found or [text])[0].strip().rstrip("?!.").strip()
    for pattern, kind in _STEMS:
        m = re.match(pattern, body, flags=re.I)
        if m and body[m.end() :].strip():
            return clean(body[m.end() :]), kind
    return clean(body), "task"


def _by_sentence(text: str, vocabulary: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """(cue, its sentence) for the cues the text uses, one per sentence."""
    out: dict[str, str] = {}
    for cue in cues(text, vocabulary):
        out.setdefault(sentence_with(text, cue), cue)
    return tuple((cue, sentence) for sentence, cue in out.items())


def _clamp(value: float) -> float:
    return round(min(0.95, max(0.05, value)), 2)
