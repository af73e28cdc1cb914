"""A newer restatement of a memory comes before the memory it restates.

People correct what they told a memory before by writing again ("the lessons moved to Wednesday",
"the freeze was shortened: it now runs ..."), and the canonical notes have no way to say that one
note supersedes another. The old note often matches the question a little better than its
correction, because it says the thing in the words the question uses. Ordered by relevance alone,
the answer that is no longer true comes first.

A hit moves above an earlier one when all of these hold:

- it was written later (its chunk's `created_at`: its document's creation);
- the two say nearly the same thing: the cosine of their stored vectors is at least
  `RESTATEMENT` (9 of the 13 labelled restatements of the relevance fixtures are 0.72 to 0.97
  from what they correct; of their other 7,537 pairs, two reach 0.70);
- it answers the question nearly as well: its cosine with the query is at most `LEEWAY` under the
  earlier hit's;
- its text says that something changed (`CHANGE`: "instead", "moved", "no longer",
  "rescheduled", "takes over", ...). Two notes on one subject that both stay true (an outbound and a return
  flight, 0.90 apart) do not trade places. Words that also open any later message of a
  conversation ("now", "new", "since") are not cues: with them, the later turns of LoCoMo's
  conversations ("a lot's happened since we last chatted") moved above the turn a question asked
  about (MRR@10 0.569 -> 0.513). A value that went up or down counts when its number follows
  (`VALUE_CHANGE`: "raised the rate to £42", "rises to £52", "down from $31"); "we raised funds"
  does not.

Measured on the three relevance fixtures and LoCoMo dev (docs/RELEVANCE.md, "Newer restatements
first"). The vectors are read (one batch) only when some hit could move.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

import numpy as np

RESTATEMENT: Final = 0.70
LEEWAY: Final = 0.15
CUES: Final = (
    *("no longer", "not anymore", "not any more", "instead", "changed", "moved", "revised", "updated"),
    *("replaced", "switched", "rescheduled", "postponed", "canceled", "cancelled", "shortened"),
    *("extended", "dropped", "from now on", "superseded", "renamed", "retired", "reverted"),
    *("replaces", "replacing", "switches", "switching"),
    # a duty or an owner handed on ("Tom takes over the rota from Sian")
    *("took over", "takes over", "taken over", "taking over", "took it over", "takes it over"),
    *("taking it over", "handed over", "hands over", "handing over"),
)
CHANGE: Final = re.compile(r"\b(?:" + "|".join(map(re.escape, CUES)) + r")\b", re.IGNORECASE)
VALUE_CUES: Final = (
    *("raised", "lowered", "increased", "decreased", "reduced", "doubled", "halved", "tripled"),
    *("went up", "went down", "up from", "down from"),
    *("raises", "lowers", "increases", "decreases", "reduces", "rises", "risen"),
    *("goes up", "gone up", "going up", "goes down", "gone down", "going down"),
)
VALUE_CHANGE: Final = re.compile(
    r"\b(?:" + "|".join(map(re.escape, VALUE_CUES)) + r")\b[^.;!?\n]{0,60}?\d", re.IGNORECASE
)
"""A value that changed: one of VALUE_CUES with a number after it in its clause ("raised the
rate to £42", "$27, down from $31"). Without the number they are not cues: "we raised funds",
"increased energy" (LoCoMo's conversations say both). Words with another common sense that a
number often follows are left out: "rose" (a name), "falls"/"fell" ("falls on 3 May"), "rising"."""


def says_change(text: str) -> bool:
    """Whether `text` holds a cue as a whole word, or a value cue with its number. Each is looked
    for as a substring first: ten hits' texts a search, and the regex alone took 30 µs a text."""
    lowered = text.lower()
    if any(cue in lowered for cue in CUES) and CHANGE.search(text) is not None:
        return True
    return any(cue in lowered for cue in VALUE_CUES) and VALUE_CHANGE.search(text) is not None


@dataclass(frozen=True)
class Said:
    """One hit as this rule sees it: its vector's key, when it was written, its cosine with the
    query, and its text."""

    key: str
    written: datetime
    similarity: float
    text: str


def restated_first(
    said: Sequence[Said], vectors_of: Callable[[Sequence[str]], Mapping[str, object]]
) -> list[int]:
    """The order of `said` (indices) with each newer restatement moved above what it restates;
    `vectors_of(keys)` reads the stored vectors of the hits that could trade places, once, and only
    when one could move."""
    order = list(range(len(said)))
    changes = [says_change(s.text) for s in said]
    pairs = [(j, i) for j in order if changes[j] for i in order if _could_restate(said[j], said[i])]
    if not any(i < j for j, i in pairs):
        return order
    wanted = list(dict.fromkeys(said[k].key for pair in pairs for k in pair))
    vectors = {key: _unit(v) for key, v in vectors_of(wanted).items()}

    def restates(newer: int, older: int) -> bool:
        a, b = vectors.get(said[newer].key), vectors.get(said[older].key)
        return (
            changes[newer]
            and a is not None
            and b is not None
            and _could_restate(said[newer], said[older])
            and float(a @ b) >= RESTATEMENT
        )

    place = 0
    while place < len(order):
        held = order[place]
        newer = [j for j in order[place + 1 :] if restates(j, held)]
        if newer:  # the newest restatement takes the place; it is checked again there
            latest = max(newer, key=lambda j: said[j].written)
            order.remove(latest)
            order.insert(place, latest)
            continue
        place += 1
    return order


def _could_restate(newer: Said, older: Said) -> bool:
    """What can be told without the vectors: written later, answering nearly as well."""
    return newer.written > older.written and newer.similarity >= older.similarity - LEEWAY


def _unit(vector: object) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v
