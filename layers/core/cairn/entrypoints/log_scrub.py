"""Credentials taken out of every log line a Cairn process writes.

Most log lines name ids and counts, but an exception's text is whatever the library that raised it
put there: a connection string with its password, an API key in a URL, a token echoed back. So
every `cairn` command (`cairn serve`, `cairn mcp`, the one-off ones) and each Lambda function makes
its log records through one factory that runs the message and any exception's traceback through
domain/scrub.py's rules once, as the record is made: a message holding a credential keeps its
format with each argument scrubbed where that takes the credential out (a formatter may take the
arguments apart: uvicorn's access formatter unpacks five), else is replaced by its scrubbed text; a
traceback holding one joins the message, scrubbed, in place of the exception, so every handler and
formatter writes only that. Records below a logger's level are never made, so the cost falls on
lines written only.

A handler that fails to write a record reports it on stderr itself (logging.Handler.handleError):
the traceback of the exception being handled then, whose text may hold what a request sent, and
the record's raw arguments. That report is scrubbed too, and so is Python's own print of an
exception nothing caught, in the main thread (a store that cannot be reached as `cairn serve`
starts: botocore quotes its endpoint's URL) or in any other. An exception leaving a Lambda handler
is printed by the Lambda runtime, outside logging, and handed to Step Functions as the task's
error: `scrubbed_error` gives the handler one whose text holds no credential, of the same name
(what the state machines' Retry and Catch match).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import traceback
from types import TracebackType
from typing import Any

from cairn.domain.scrub import scrub

_lock = threading.Lock()
_installed = False


def install() -> None:
    """Make every later log record of this process through `scrubbed`, and scrub the reports of a
    record a handler could not write and of an exception nothing caught (once; later calls do nothing)."""
    global _installed
    with _lock:
        if _installed:
            return
        made = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            return scrubbed(made(*args, **kwargs))

        logging.setLogRecordFactory(factory)
        logging.Handler.handleError = _report_failure  # type: ignore[method-assign,assignment]
        sys.excepthook = _uncaught
        threading.excepthook = _uncaught_in_thread
        _installed = True


def scrubbed(record: logging.LogRecord) -> logging.LogRecord:
    """`record` with the credentials of its message and its exception's text replaced by markers."""
    try:
        message = record.getMessage()
    except Exception:  # arguments that do not fit the format: logging reports that as it would
        return record
    clean = scrub(message)
    if clean != message:
        args = _scrubbed_args(record)
        record.msg, record.args = (record.msg, args) if args is not None else (clean, ())
    if record.exc_info and record.exc_info[1] is not None:
        text = logging.Formatter().formatException(record.exc_info)
        if (cleaned := scrub(text)) != text:  # the traceback goes in the message, which every
            # formatter writes (some format `exc_info` themselves, ignoring `exc_text`)
            record.msg, record.args = f"{clean}\n{cleaned}", ()
            record.exc_info, record.exc_text = None, None
    return record


def _scrubbed_args(record: logging.LogRecord) -> tuple[object, ...] | None:
    """`record`'s arguments, each scrubbed, if the message they make then holds no credential."""
    if not isinstance(record.args, tuple) or not record.args:
        return None
    args = tuple(scrub(arg) if isinstance(arg, str) else arg for arg in record.args)
    try:
        made = str(record.msg) % args
    except Exception:  # a scrubbed argument no longer fits its place (`%d`)
        return None
    return args if scrub(made) == made else None


def scrubbed_error(error: Exception) -> Exception:
    """`error` if its text holds no credential; else `error` with its arguments scrubbed, when that
    takes the credential out of its text, or a new exception of the same name holding its scrubbed
    text (an OSError's text, say, is made from its attributes, not its arguments)."""
    text = str(error)
    clean = scrub(text)
    if clean == text:
        return error
    with contextlib.suppress(Exception):
        error.args = tuple(scrub(arg) if isinstance(arg, str) else arg for arg in error.args)
        if scrub(made := str(error)) == made:
            return error
    kind = type(error)
    names = {"__module__": kind.__module__, "__qualname__": kind.__qualname__}
    same_name = type(kind.__name__, (Exception,), names)
    return same_name(clean)


def _report_failure(handler: logging.Handler, record: logging.LogRecord) -> None:
    """logging.Handler.handleError's report of a record its handler could not write, scrubbed."""
    if not (logging.raiseExceptions and sys.stderr):
        return
    kind, error, trace = sys.exc_info()
    try:
        try:
            said = f"Message: {record.msg!r}\nArguments: {record.args}\n"
        except Exception:
            said = "the message and arguments could not be printed\n"
        report = "".join(traceback.format_exception(kind, error, trace))
        where = f"Logged from file {record.filename}, line {record.lineno}\n"
        sys.stderr.write(scrub(f"--- Logging error ---\n{report}{where}{said}"))
    except OSError:
        pass
    finally:
        del kind, error, trace


def _uncaught(kind: type[BaseException], error: BaseException | None, trace: TracebackType | None) -> None:
    """sys.excepthook's print of an exception nothing caught, scrubbed."""
    with contextlib.suppress(OSError, AttributeError):  # no stderr left to write to
        sys.stderr.write(scrub("".join(traceback.format_exception(kind, error, trace))))


def _uncaught_in_thread(args: threading.ExceptHookArgs) -> None:
    """threading.excepthook's print of an exception that ended a thread, scrubbed."""
    if args.exc_type is SystemExit:
        return
    name = args.thread.name if args.thread is not None else threading.get_ident()
    with contextlib.suppress(OSError, AttributeError):
        sys.stderr.write(f"Exception in thread {name}:\n")
    _uncaught(args.exc_type, args.exc_value, args.exc_traceback)
