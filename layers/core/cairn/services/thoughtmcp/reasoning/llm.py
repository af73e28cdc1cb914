"""The reasoning tools' model path: one JSON object per call, validated, repaired at most once.

The Generator is asked (through model_calls) with the tool's instructions as the question and the
problem, its context and the relevant memories as passages. The reply's JSON object is validated
with the tool's reply model. When it does not validate, the model is asked once more with the
validation errors and its own reply, for the corrected object. A second invalid reply, a
GenerationError or no reply before the deadline is `ReasoningFailed`, whose message names the
tool and what was wrong, never the problem's text nor the reply.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ValidationError

from cairn.domain.errors import CairnError
from cairn.ports.generator import GenerationError, Generator, Passage
from cairn.services.memory.model_calls import ReplyInvalid, complete, failure_reason, json_value

T = TypeVar("T", bound=BaseModel)

MAX_PASSAGE_CHARS: Final = 12_000
MAX_BAD_REPLY_CHARS: Final = 4_000
MAX_ERRORS: Final = 8

log = logging.getLogger(__name__)


class ReasoningFailed(CairnError):
    """The configured model could not produce the tool's result."""

    code = "reasoning_failed"

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


def passages(
    problem: str, background: str | None, lists: dict[str, list[str]], memories: Sequence[str]
) -> list[Passage]:
    """The problem, then the context, then each memory, as the model's passages."""
    out = [Passage("problem", "problem", f"Problem: {problem}"[:MAX_PASSAGE_CHARS])]
    context = [f"Background: {background}"] if background else []
    context += [f"{label}: " + "; ".join(items) for label, items in lists.items() if items]
    if context:
        out.append(Passage("context", "context", "\n".join(context)[:MAX_PASSAGE_CHARS]))
    out += [
        Passage(f"memory-{i}", f"memory-{i}", f"Relevant memory: {m}"[:MAX_PASSAGE_CHARS])
        for i, m in enumerate(memories, 1)
    ]
    return out


def ask(
    generator: Generator,
    tool: str,
    instructions: str,
    reply_model: type[T],
    given: list[Passage],
    *,
    deadline: float,
    validation_context: dict[str, Any] | None = None,
) -> T:
    """The validated reply (see the module docstring); `deadline` is on time.monotonic()."""
    prompt = instructions + _FORMAT
    text = _call(generator, tool, prompt, given, deadline)
    try:
        return _parse(text, reply_model, validation_context)
    except (ReplyInvalid, ValidationError) as exc:
        errors = _errors(exc)
    log.info("%s: the model's reply did not validate (%s); asking once more", tool, errors)
    repair = (
        f"{prompt}\n\nYour previous reply was rejected: {errors}.\n"
        f"Your previous reply was:\n{text[:MAX_BAD_REPLY_CHARS]}\n"
        "Reply again with only the corrected JSON object."
    )
    text = _call(generator, tool, repair, given, deadline)
    try:
        return _parse(text, reply_model, validation_context)
    except (ReplyInvalid, ValidationError) as exc:
        raise ReasoningFailed(
            f"{tool}: the model's reply was not the JSON object asked for, even after one repair attempt "
            f"({_errors(exc)})"
        ) from None


_FORMAT = (
    "\n\nReply with one JSON object and nothing else: no prose, no code fence, no passage numbers. "
    "Use only what the passages state; do not invent facts."
)


def _call(generator: Generator, tool: str, prompt: str, given: list[Passage], deadline: float) -> str:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise ReasoningFailed(f"{tool}: the model gave no reply in time", timed_out=True)
    try:
        return complete(generator, prompt, given, timeout_s=remaining).text
    except GenerationError as exc:
        timed_out = exc.code == "generation_timeout"
        raise ReasoningFailed(
            f"{tool}: the model failed ({failure_reason(exc)})", timed_out=timed_out
        ) from None
    except TimeoutError:
        raise ReasoningFailed(f"{tool}: the model gave no reply in time", timed_out=True) from None


def _parse(text: str, reply_model: type[T], context: dict[str, Any] | None) -> T:
    value = json_value(text)
    if not isinstance(value, dict):
        raise ReplyInvalid("the reply is not a JSON object")
    return reply_model.model_validate(value, context=context)


def _errors(exc: ReplyInvalid | ValidationError) -> str:
    """What was wrong, by field path and rule: never the values (the reply may quote the problem)."""
    if isinstance(exc, ReplyInvalid):
        return str(exc)
    parts = []
    for error in exc.errors(include_input=False, include_url=False)[:MAX_ERRORS]:
        where = ".".join(str(p) for p in error["loc"]) or "the object"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)
