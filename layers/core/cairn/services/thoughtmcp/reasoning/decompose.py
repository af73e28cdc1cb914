"""Offline problem decomposition: the sentence and clause structure of the text, nothing else.

A problem is split coarse to fine, one level per depth of the tree:

1. sentences and list items;
2. clauses: `;`, `then` / `and then` / `after that`, `before`, `after`, `requires` / `depends on` /
   `needs`, a comma between clauses, and `and` between two verb phrases (both sides at least two
   words, the right side not starting with a determiner: "build the API and write tests" splits,
   "latency and throughput" and "the user and the customer" do not);
3. parts of a clause: purpose (`so that`, `in order to`), condition or limit (`without`, `unless`,
   `while`), means (`by`, `using`, `via`, `through`, `with`), cause (`because`), a colon, and any
   `and` / `or` list.

A node's children come from the first level, at or below its own, that cuts it in two or more
pieces; a node no level cuts is a leaf, except the problem itself: when no sentence or clause cuts
it, its leading verb may name a kind of work with known stages (plans.py: "build X" is designed,
then implemented while its infrastructure is set up). The context's goals and constraints become
children of the root. Ordering words give dependencies between siblings: `then` (and anything `and`-ed onto
the piece after it) follows everything of the stage before; `A after B` and `A requires B` put B
first; a piece that starts with "first" precedes its siblings. Every child depends on its parent
(the root comes first, as the problem statement frames its parts). A dependency that would close
a cycle is never added, so the execution order is always a topological sort (ties in reading order).

The dependencies stay linear in the number of pieces, so a long problem costs time and reply size
in proportion to its length: more than FULL_STAGE "first" pieces form a chain, each other piece
waiting for the last one it does not itself lead to (the same order, one edge a piece), and a
stage of more than FULL_STAGE pieces after a stage of more than FULL_STAGE pieces waits for it
through its first piece (which waits for each piece of the stage before; the others wait for it).
"""

from __future__ import annotations

import bisect
import heapq
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Final

from cairn.domain.js_text import js_blank, js_squash
from cairn.services.thoughtmcp.reasoning.plans import plan_for
from cairn.services.thoughtmcp.reasoning.text import clean, sentences, shorten, word_starts, words, wordset


class Rel(Enum):
    NONE = "none"  # a sibling of the pieces in the same stage
    SEQ = "seq"  # after the previous stage
    REV = "rev"  # the previous piece waits for this one
    FIRST = "first"  # every sibling waits for this one


# (pattern, relation to the previous piece); the separator itself is dropped.
_CLAUSE_SEPARATORS: Final[tuple[tuple[str, Rel], ...]] = (
    (r"\s*;\s*", Rel.NONE),
    (r",?\s+and then\s+", Rel.SEQ),
    (r",?\s+(?:and\s+)?after that,?\s+", Rel.SEQ),
    (r",\s*then\s+|\s+then\s+", Rel.SEQ),
    (r",?\s+before\s+", Rel.SEQ),
    (r",?\s+after\s+", Rel.REV),
    (r"\s+(?:requires|require|depends on|depend on|needs)\s+", Rel.REV),
    (r",\s*(?:and\s+)?", Rel.NONE),
    (r"\s+and\s+", Rel.NONE),
)
_PART_SEPARATORS: Final[tuple[tuple[str, Rel], ...]] = (  # the marker stays with its part
    (r",?\s+(?=(?:so that|in order to|so as to)\s)", Rel.NONE),
    (r",?\s+(?=(?:without|unless|while)\s)", Rel.NONE),
    (r",?\s+(?=because\s)", Rel.REV),
    (r",?\s+(?=(?:by|using|via|through)\s)", Rel.REV),
    (r"\s*:\s+", Rel.NONE),
    (r",?\s+(?:and|or)\s+", Rel.NONE),
)
_SUBORDINATE: Final = wordset("if when while although though because since before after once unless")
# a comma or "and" before these words does not start a new clause
_ATTACHED: Final = _SUBORDINATE | wordset("so in without which who whose where to for as")
_LEADING_DETERMINER: Final = wordset("the a an its their our my your this that these those his her")
_STEP_CUES: Final = re.compile(r"^(?:then|next|after that|afterwards|finally|lastly|subsequently)\b", re.I)
_FIRST_CUES: Final = re.compile(r"^(?:first(?:ly)?|to begin(?: with)?|start by|begin by)\b", re.I)
FULL_STAGE: Final = 8  # past this many, "first" pieces chain and a stage links through its first piece

DOMAINS: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    (
        "database",
        wordset(
            "database databases schema schemas sql query queries table tables index indexes migration "
            "migrations postgres postgresql mysql sqlite records"
        ),
    ),
    ("api", wordset("api apis endpoint endpoints rest graphql backend server-side webhook")),
    ("testing", wordset("test tests testing qa regression coverage verify validate")),
    (
        "security",
        wordset("security auth authentication authorization password encryption vulnerability permissions"),
    ),
    (
        "performance",
        wordset("performance latency throughput speed slow fast optimize optimise cache caching p95 p99"),
    ),
    (
        "infrastructure",
        wordset(
            "deploy deployment infrastructure cloud kubernetes docker ci pipeline servers hosting scaling "
            "scalable monitoring outage"
        ),
    ),
    ("frontend", wordset("ui ux frontend interface page screen mobile app button layout")),
    ("documentation", wordset("document documentation docs readme guide write-up")),
    ("people", wordset("team hire hiring training onboarding staff people engineers")),
    (
        "business",
        wordset("customer customers revenue pricing market marketing sales retention growth cost costs"),
    ),
    ("planning", wordset("plan roadmap schedule timeline deadline budget prioritize milestone quarter")),
    ("research", wordset("research investigate study hypothesis experiment analyze analyse")),
    ("design", wordset("design architecture prototype mockup model diagram")),
)


@dataclass
class Node:
    id: str
    text: str
    depth: int
    level: int  # the splitting level its children come from (0 sentences, 1 clauses, 2 parts, 3 none)
    parent: str | None = None
    origin: str = "problem"  # problem | goal | constraint
    relation: Rel = Rel.NONE
    children: list[Node] = field(default_factory=list)


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    type: str  # hierarchical | sequential | prerequisite


@dataclass
class Tree:
    nodes: list[Node]  # reading (pre-)order
    edges: list[Edge]

    @property
    def order(self) -> list[str]:
        return topological([n.id for n in self.nodes], self.edges)


def decompose(
    problem: str, *, max_depth: int = 3, goals: tuple[str, ...] = (), constraints: tuple[str, ...] = ()
) -> Tree:
    """The problem's tree to `max_depth` (1 = the problem alone), with its dependencies."""
    root = Node("problem-1", " ".join(problem.split()), depth=1, level=0)
    nodes: list[Node] = []
    edges: list[Edge] = []

    def grow(node: Node, extra: list[tuple[str, str]]) -> None:
        nodes.append(node)
        if node.depth >= max_depth:
            return
        level, pieces = split(node.text, node.level)
        pieces = [(p, r) for p, r in pieces if p] if len(pieces) > 1 else []
        # a plan beats cutting a one-clause problem into its parts ("increase" / "by 20%")
        plan = plan_for(node.text) if node.depth == 1 and (not pieces or level >= 2) else None
        if plan is not None:
            level = 3  # a stage's step is a leaf
            pieces = [
                (step, Rel.SEQ if k > 0 and j == 0 else Rel.NONE)
                for k, stage in enumerate(plan.stages)
                for j, step in enumerate(stage)
            ]
        kids = [(text, rel, "problem") for text, rel in pieces]
        kids += [(text, Rel.NONE, origin) for origin, text in extra]
        for i, (text, rel, origin) in enumerate(kids, 1):
            child = Node(f"{node.id}-{i}", text, node.depth + 1, level + 1, node.id, origin, rel)
            node.children.append(child)
        for child in node.children:
            edges.append(Edge(node.id, child.id, "hierarchical"))
        edges.extend(_sibling_edges([c for c in node.children if c.origin == "problem"]))
        for child in node.children:
            grow(child, [])

    extra = [("goal", g) for g in goals if not js_blank(g)]
    extra += [("constraint", c) for c in constraints if not js_blank(c)]
    grow(root, [(origin, js_squash(text)) for origin, text in extra])
    return Tree(nodes, edges)


def split(text: str, level: int) -> tuple[int, list[tuple[str, Rel]]]:
    """The first level from `level` on that cuts `text` into two or more pieces, and the pieces
    (cleaned) with their relation to the piece before; (3, [(text, NONE)]) when none does."""
    for at in range(level, 3):
        pieces = _split_at(text, at)
        if len(pieces) > 1:
            return at, pieces
    return 3, [(clean(text), Rel.NONE)]


def name_of(text: str) -> str:
    return shorten(clean(text), 90)


def domain_of(text: str, inherited: str = "general") -> str:
    """The domain whose keywords the text uses most (table order breaks ties), else `inherited`."""
    tokens = words(text)
    best, score = inherited, 0
    for domain, vocabulary in DOMAINS:
        hits = sum(1 for w in tokens if w in vocabulary)
        if hits > score:
            best, score = domain, hits
    return best


def topological(ids: list[str], edges: list[Edge]) -> list[str]:
    """Kahn's algorithm, ready nodes taken in `ids` order; nodes on a cycle come last, in order."""
    position = {node: i for i, node in enumerate(ids)}
    waiting = {node: 0 for node in ids}
    after: dict[str, list[str]] = {node: [] for node in ids}
    for edge in edges:
        if edge.source in position and edge.target in position:
            waiting[edge.target] += 1
            after[edge.source].append(edge.target)
    ready = [(position[n], n) for n in ids if waiting[n] == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        _, node = heapq.heappop(ready)
        out.append(node)
        for nxt in after[node]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, (position[nxt], nxt))
    done = set(out)
    return out + [n for n in ids if n not in done]


def _split_at(text: str, level: int) -> list[tuple[str, Rel]]:
    if level == 0:
        found = sentences(text)
        return (
            [(clean(s), _lead_rel(s, Rel.SEQ if _STEP_CUES.match(s) else Rel.NONE)) for s in found]
            if len(found) > 1
            else []
        )
    separators = _CLAUSE_SEPARATORS if level == 1 else _PART_SEPARATORS
    pieces: list[tuple[str, Rel]] = [(text.strip().rstrip(".!?"), Rel.NONE)]
    for pattern, rel in separators:
        cut: list[tuple[str, Rel]] = []
        for piece, piece_rel in pieces:
            cut.extend(_cut(piece, piece_rel, pattern, rel, clause=level == 1, plain=rel is Rel.NONE))
        pieces = cut
    out = [(clean(p), _lead_rel(p, r)) for p, r in pieces]
    return out if len(out) > 1 and all(out_piece for out_piece, _ in out) else []


def _cut(
    piece: str, piece_rel: Rel, pattern: str, rel: Rel, *, clause: bool, plain: bool
) -> list[tuple[str, Rel]]:
    """`piece` cut at every match of `pattern` whose sides are both acceptable pieces."""
    out: list[tuple[str, Rel]] = []
    start, current_rel = 0, piece_rel
    # a side is judged by its first two words, looked up rather than read again at each match
    starts, tokens = word_starts(piece)
    for m in re.finditer(pattern, piece, flags=re.I):
        left = _leading(starts, tokens, start, m.start())
        right = _leading(starts, tokens, m.end(), len(piece))
        comma = "," in m.group(0) and "and" not in m.group(0)
        if not _acceptable(left, right, clause=clause, plain=plain, comma=comma):
            continue
        out.append((piece[start : m.start()], current_rel))
        start, current_rel = m.end(), rel
    out.append((piece[start:], current_rel))
    return out


def _leading(starts: list[int], tokens: list[str], begin: int, end: int) -> list[str]:
    """The first two words starting in [begin, end) (a separator never splits a word)."""
    i = bisect.bisect_left(starts, begin)
    return [token for at, token in zip(starts[i : i + 2], tokens[i : i + 2], strict=True) if at < end]


def _acceptable(lw: list[str], rw: list[str], *, clause: bool, plain: bool, comma: bool) -> bool:
    """`lw`, `rw`: the first two words of each side."""
    if not lw or not rw:
        return False
    if not clause:
        return True
    if len(lw) < 2 or len(rw) < 2:
        return False
    if plain and (rw[0] in _LEADING_DETERMINER or rw[0] in _ATTACHED):
        return False
    # "If it fails, roll back" stays one clause: a comma after a subordinate clause is not a list
    return not (comma and lw[0] in _SUBORDINATE)


def _sibling_edges(children: list[Node]) -> list[Edge]:
    """Stage and `after` edges, then "first" edges; none of them closes a cycle: stage edges go
    forward in reading order and end at stage pieces, an `after` edge goes back one piece from a
    piece no stage edge ends at, and a "first" edge never targets a piece that leads to its source."""
    edges: list[Edge] = []
    sizes = _stage_sizes(children)
    previous_stage: list[Node] = []
    stage: list[Node] = []
    for i, child in enumerate(children):
        if i > 0 and child.relation is Rel.SEQ:
            previous_stage, stage = stage, [child]
        elif i > 0 and child.relation is Rel.REV:
            edges.append(Edge(child.id, children[i - 1].id, "prerequisite"))
            continue
        else:
            stage.append(child)
        full = len(previous_stage) <= FULL_STAGE or sizes[stage[0].id] <= FULL_STAGE
        waits_for = previous_stage if full or child is stage[0] else stage[:1]
        edges.extend(Edge(before.id, child.id, "sequential") for before in waits_for)
    return edges + _first_edges(children, edges)


def _stage_sizes(children: list[Node]) -> dict[str, int]:
    """The number of pieces of each stage, by the id of its first piece."""
    sizes: dict[str, int] = {}
    start = ""
    for i, child in enumerate(children):
        if i == 0 or child.relation is Rel.SEQ:
            start = child.id
        if i == 0 or child.relation is not Rel.REV:
            sizes[start] = sizes.get(start, 0) + 1
    return sizes


def _first_edges(children: list[Node], edges: list[Edge]) -> list[Edge]:
    """Each "first" piece before every sibling that does not lead to it, in reading order; past
    FULL_STAGE "first" pieces, each sibling waits for the last of them it does not lead to (the
    same order, through the edge from each "first" piece to the next)."""
    firsts = [c for c in children if c.relation is Rel.FIRST]
    if not firsts:
        return []
    reached = _earliest_reached(firsts, edges)
    by_source: list[list[Edge]] = [[] for _ in firsts]
    for child in children:
        k = reached.get(child.id, len(firsts))  # the "first" pieces before the k-th come before it
        sources = range(k) if len(firsts) <= FULL_STAGE else range(max(k - 1, 0), k)
        for source in sources:
            by_source[source].append(Edge(firsts[source].id, child.id, "prerequisite"))
    return [edge for group in by_source for edge in group]


def _earliest_reached(firsts: list[Node], edges: list[Edge]) -> dict[str, int]:
    """For each piece that leads to a "first" piece, the index of the earliest one it leads to:
    one backward walk per "first" piece, stopping at pieces an earlier walk marked."""
    before: dict[str, list[str]] = {}
    for edge in edges:
        before.setdefault(edge.target, []).append(edge.source)
    mark: dict[str, int] = {}
    for k, first in enumerate(firsts):
        todo = [first.id] if first.id not in mark else []
        mark.setdefault(first.id, k)
        while todo:
            for prior in before.get(todo.pop(), ()):
                if prior not in mark:
                    mark[prior] = k
                    todo.append(prior)
    return mark


def _lead_rel(raw: str, rel: Rel) -> Rel:
    """FIRST for a piece that opens with "first" or "start by", else `rel`."""
    lead = re.sub(r"^[\s,;]*(?:and\s+)?", "", raw)
    return Rel.FIRST if _FIRST_CUES.match(lead) else rel
