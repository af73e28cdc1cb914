"""Asking the Generator for JSON from a synchronous service, the same way everywhere.

Services run in worker threads (HTTP routes, MCP tools) or on their own (jobs, the CLI); the
Generator is async. Model-backed extraction (entities, assertions), reflection and the reasoning
tools all ask for one JSON value, parse it leniently (a fenced block, or prose around it) and,
when the model fails, log *what* failed without quoting the text or the reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Final

import anyio
import anyio.from_thread

from cairn.ports.generator import Answer, GenerationError, Generator, Passage

EXTRACTIVE: Final = "extractive"
"""The model id of the offline extractive generator, which quotes passages and synthesises nothing."""


class ReplyInvalid(Exception):
    """The model's reply does not hold the JSON asked for."""


def offline(generator: Generator) -> bool:
    """Whether no language model is configured (only the extractive generator)."""
    return generator.model_id == EXTRACTIVE


def complete(
    generator: Generator, question: str, passages: Sequence[Passage], *, timeout_s: float | None = None
) -> Answer:
    """The generator's whole answer, from a service thread: on the caller's event loop when the
    thread is one of its workers, else on a loop of its own. TimeoutError past `timeout_s`."""

    async def ask() -> Answer:
        if timeout_s is None:
            return await generator.complete(question, passages)
        with anyio.fail_after(timeout_s):
            return await generator.complete(question, passages)

    try:
        return anyio.from_thread.run(ask)
    except anyio.NoEventLoopError:
        return anyio.run(ask)


def json_value(reply: str) -> Any:
    """The first JSON value of a reply (the whole reply, a fenced block, or the first `[`/`{`
    onwards); ReplyInvalid when there is none."""
    text = reply.strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.S)
    if fenced:
        text = fenced.group(1)
    try:
        return json.loads(text)
    except ValueError:
        start = min((i for i in (text.find("["), text.find("{")) if i >= 0), default=-1)
        if start < 0:
            raise ReplyInvalid("no JSON in the reply") from None
        try:
            value, _ = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            raise ReplyInvalid("the reply is not valid JSON") from None
        return value


def json_list(reply: str, key: str) -> list[Any]:
    """A JSON array from the reply, or the array an object holds under `key`."""
    value = json_value(reply)
    if isinstance(value, dict):
        value = value.get(key)
    if not isinstance(value, list):
        raise ReplyInvalid("the reply is not a JSON array")
    return value


def json_object(reply: str) -> dict[str, Any] | None:
    """The JSON object of a reply, or None."""
    try:
        value = json_value(reply)
    except ReplyInvalid:
        value = None
    if isinstance(value, dict):
        return value
    start = reply.find("{")
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(reply, start)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def failure_reason(exc: BaseException) -> str:
    """What failed, without anything the message could quote from the input or the reply."""
    if isinstance(exc, GenerationError):
        return f"GenerationError {exc.code}"
    if isinstance(exc, TimeoutError):
        return "no reply in time"
    if isinstance(exc, ReplyInvalid):
        return str(exc)
    return type(exc).__name__
