"""Credentials taken out of every log line a serving Cairn process writes.

Most log lines name ids and counts, but an exception's text is whatever the library that raised
it put there: a connection string with its password, an API key in a URL, a token echoed back.
So a long-running process (`cairn serve`, `cairn mcp`, each Lambda function) makes its log records
through one factory that runs the message and any exception's traceback through domain/scrub.py's
rules once, as the record is made: a message holding a credential is replaced by its scrubbed
text, and a traceback holding one joins the message, scrubbed, in place of the exception, so every
handler and formatter writes only that. Records below a logger's level are never made, so the cost
falls on lines written only.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from cairn.domain.scrub import scrub

_lock = threading.Lock()
_installed = False


def install() -> None:
    """Make every later log record of this process through `scrubbed` (once; later calls do nothing)."""
    global _installed
    with _lock:
        if _installed:
            return
        made = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            return scrubbed(made(*args, **kwargs))

        logging.setLogRecordFactory(factory)
        _installed = True


def scrubbed(record: logging.LogRecord) -> logging.LogRecord:
    """`record` with the credentials of its message and its exception's text replaced by markers."""
    try:
        message = record.getMessage()
    except Exception:  # arguments that do not fit the format: logging reports that as it would
        return record
    clean = scrub(message)
    if clean != message:
        record.msg, record.args = clean, ()
    if record.exc_info and record.exc_info[1] is not None:
        text = logging.Formatter().formatException(record.exc_info)
        if (cleaned := scrub(text)) != text:  # the traceback goes in the message, which every
            # formatter writes (some format `exc_info` themselves, ignoring `exc_text`)
            record.msg, record.args = f"{clean}\n{cleaned}", ()
            record.exc_info, record.exc_text = None, None
    return record
