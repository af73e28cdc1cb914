"""Fitting an embedding model's calibration (relevance.py) on labelled questions: `cairn calibrate`.

The fixture is a few dozen items and questions, some of them with answers among the items and
some about things the items never mention (bench/data/relevance/ holds two). Each question's best
cosine over the items is its evidence; a logistic curve is fitted to "has an answer" over that
cosine, each class weighted to half, so the midpoint is where a question is as likely answered as
not whatever the mix. On the embedded MiniLM model this gives 0.43 / 11.5 and 0.42 / 11.0 on the
two fixtures, beside the 0.40 / 12.0 Cairn ships for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
from pydantic import BaseModel, Field, model_validator

from cairn.ports.embedder import Embedder
from cairn.services.search.relevance import GOOD_MATCH, Calibration

MIN_EACH: Final = 5
"""Questions with answers, and without, that a fit needs at least."""
MAX_SLOPE: Final = 50.0  # where no question of one class is near the other's (a step, in effect)


class FixtureItem(BaseModel):
    id: str
    text: str = Field(min_length=1)
    title: str = ""


class FixtureQuestion(BaseModel):
    text: str = Field(min_length=1)
    relevant: list[str] = Field(default_factory=list)


class Fixture(BaseModel):
    items: list[FixtureItem] = Field(min_length=1)
    queries: list[FixtureQuestion]

    @model_validator(mode="after")
    def _enough(self) -> Fixture:
        ids = {item.id for item in self.items}
        unknown = sorted({i for q in self.queries for i in q.relevant} - ids)
        if unknown:
            raise ValueError(f"questions name items the fixture does not hold: {', '.join(unknown[:5])}")
        answered = sum(1 for q in self.queries if q.relevant)
        if answered < MIN_EACH or len(self.queries) - answered < MIN_EACH:
            raise ValueError(
                f"a fit needs at least {MIN_EACH} questions with answers and {MIN_EACH} without "
                f"(the fixture has {answered} and {len(self.queries) - answered})"
            )
        return self


@dataclass(frozen=True)
class Fitted:
    model_id: str
    calibration: Calibration
    answered: int
    unanswered: int
    auc: float
    """How often a question with an answer has a higher best cosine than one without."""
    answered_above: float
    """Share of the questions with an answer whose best match reaches GOOD_MATCH."""
    unanswered_above: float


def fit(embedder: Embedder, fixture: Fixture) -> Fitted:
    items = embedder.embed([f"# {i.title}\n\n{i.text}" if i.title else i.text for i in fixture.items])
    questions = embedder.embed([q.text for q in fixture.queries])
    best = (questions @ items.T).max(axis=1).astype(np.float64)
    answered = np.array([bool(q.relevant) for q in fixture.queries])
    calibration = logistic(best, answered)
    scores = np.array([calibration(float(c)) for c in best])
    return Fitted(
        embedder.model_id,
        calibration,
        int(answered.sum()),
        int((~answered).sum()),
        auc(best[answered], best[~answered]),
        float((scores[answered] >= GOOD_MATCH).mean()),
        float((scores[~answered] >= GOOD_MATCH).mean()),
    )


def logistic(x: np.ndarray, y: np.ndarray, steps: int = 100) -> Calibration:
    """The balanced logistic fit of y (bool) over x, by Newton's method; slope at least 1."""
    target = y.astype(np.float64)
    weight = np.where(y, 0.5 / y.mean(), 0.5 / (1 - y.mean()))
    a, b = 10.0, -10.0 * float(np.median(x))
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(a * x + b, -50, 50)))
        r = weight * (p - target)
        s = weight * p * (1 - p)
        gradient = np.array([np.sum(r * x), np.sum(r)])
        hessian = np.array([[np.sum(s * x * x), np.sum(s * x)], [np.sum(s * x), np.sum(s)]])
        step = np.linalg.solve(hessian + 1e-9 * np.eye(2), gradient)
        a, b = a - step[0], b - step[1]
        if np.abs(step).max() < 1e-9 or a > MAX_SLOPE:  # converged, or the classes do not overlap
            break
    midpoint = -float(b) / float(a) if a > 0 else float(np.median(x))
    slope = min(max(float(a), 1.0), MAX_SLOPE)  # backwards data: still a usable, rising curve
    return Calibration(midpoint=round(midpoint, 4), slope=round(slope, 2))


def auc(positives: Sequence[float] | np.ndarray, negatives: Sequence[float] | np.ndarray) -> float:
    pairs = [(1.0 if p > n else 0.5 if p == n else 0.0) for p in positives for n in negatives]
    return round(float(np.mean(pairs)), 4) if pairs else 0.0
