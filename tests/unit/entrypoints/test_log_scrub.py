"""Credentials never reach the log of a serving process (entrypoints/log_scrub.py): its messages
and its exceptions' tracebacks are scrubbed as each record is made, whatever formats them, and so
is a handler's report of a record it failed to write."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cairn.entrypoints import log_scrub
from cairn.entrypoints.cli import parser, process_limits

DSN = "postgres://cairn:hunter2-very-secret@db.internal:5432/brains"
KEY = "cairn_" + "k" * 32
DASHED = "cairn_key_" + "0" * 26 + "_TSU8ciHIGZedY60IQJ3DU5NiPlxUgV8Zz9-Yy8_Xx7w"  # as api_keys.py makes them


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The factory installed for this test only (the process's own is put back after)."""
    made = logging.getLogRecordFactory()
    monkeypatch.setattr(log_scrub, "_installed", False)
    monkeypatch.setattr(logging.Handler, "handleError", logging.Handler.handleError)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    log_scrub.install()
    yield
    logging.setLogRecordFactory(made)


def written(logger: logging.Logger, formatter: logging.Formatter, emit: Callable[[], object]) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    logger.addHandler(handler)
    logger.propagate = False
    try:
        emit()
    finally:
        logger.removeHandler(handler)
    return stream.getvalue()


class _JsonFormatter(logging.Formatter):
    """A formatter that formats `exc_info` itself and ignores `exc_text` (as JSON loggers do)."""

    def format(self, record: logging.LogRecord) -> str:
        trace = self.formatException(record.exc_info) if record.exc_info else None
        return json.dumps({"message": record.getMessage(), "exception": trace})


def test_a_message_naming_a_credential_is_written_without_it(installed: None) -> None:
    logger = logging.getLogger("cairn.test.scrub.message")
    out = written(
        logger, logging.Formatter("%(message)s"), lambda: logger.warning("no pool at %s (%s)", DSN, KEY)
    )
    assert "hunter2" not in out and KEY not in out
    assert "[CONNECTION_STRING_REDACTED]" in out and "[API_KEY_REDACTED]" in out


@pytest.mark.parametrize("formatter", [logging.Formatter("%(message)s"), _JsonFormatter()])
def test_a_traceback_naming_a_credential_is_written_without_it_by_any_formatter(
    installed: None, formatter: logging.Formatter
) -> None:
    logger = logging.getLogger("cairn.test.scrub.trace")

    def failing() -> None:
        try:
            raise ConnectionError(f"could not connect to {DSN}")
        except ConnectionError:
            logger.exception("the store could not be opened")

    out = written(logger, formatter, failing)
    assert "hunter2" not in out and "[CONNECTION_STRING_REDACTED]" in out
    assert "the store could not be opened" in out and "ConnectionError" in out and "Traceback" in out


def test_an_access_line_naming_a_key_keeps_its_arguments_for_uvicorn_s_formatter(
    installed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from uvicorn.logging import AccessFormatter

    logger = logging.getLogger("cairn.test.scrub.access")
    formatter = AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s', use_colors=False)
    path = f"/v1/brains?key={DASHED}"
    out = written(
        logger,
        formatter,
        lambda: logger.warning('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", path, "1.1", 401),
    )
    assert out == '127.0.0.1:5 - "GET /v1/brains?key=[SECRET_REDACTED] HTTP/1.1" 401 Unauthorized\n'
    assert "Logging error" not in capsys.readouterr().err


def test_a_handler_s_report_of_a_record_it_could_not_write_names_no_credential(
    installed: None, capsys: pytest.CaptureFixture[str]
) -> None:
    logger = logging.getLogger("cairn.test.scrub.failed")

    def failing() -> None:
        try:
            raise ConnectionError(f"could not connect to {DSN}")
        except ConnectionError:  # the report prints the exception being handled, and the arguments
            logger.warning("%d keys", DASHED)

    written(logger, logging.Formatter("%(message)s"), failing)
    err = capsys.readouterr().err
    assert "--- Logging error ---" in err and "TypeError" in err and "ConnectionError" in err
    assert "hunter2" not in err and "Yy8_Xx7w" not in err and DASHED[:30] not in err


def test_botocore_s_debug_lines_name_no_session_token(installed: None) -> None:
    import boto3
    from botocore.awsrequest import AWSResponse

    token = "IQoJb3JpZ2luX2VjEXAMPLE/SessionToken+abcdefghijklmnop=="
    client = boto3.client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://dynamodb.invalid",
        aws_access_key_id="ASIAIOSFODNN7EXAMPLE",
        aws_secret_access_key="wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY1",
        aws_session_token=token,
    )
    # answered once signed and logged, as the table would: no connection is made
    answer = AWSResponse("http://dynamodb.invalid", 200, {}, None)
    answer._content = b"{}"
    client.meta.events.register("before-send.dynamodb.GetItem", lambda **_: answer)
    logger = logging.getLogger("botocore")
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        out = written(
            logger,
            logging.Formatter("%(message)s"),
            lambda: client.get_item(TableName="t", Key={"pk": {"S": "x"}}),
        )
    finally:
        logger.setLevel(level)
        logger.propagate = True
    assert "x-amz-security-token:[AWS_SECRET_REDACTED]" in out  # the canonical request it signs
    assert "'X-Amz-Security-Token': b'[AWS_SECRET_REDACTED]'" in out  # the request it sends
    assert "IQoJb3JpZ2luX2VjEXAMPLE" not in out and "wJalr" not in out


def test_botocore_s_debug_lines_name_no_secret_an_answer_holds(installed: None) -> None:
    import boto3
    from moto import mock_aws

    logger = logging.getLogger("botocore")
    level = logger.level
    with mock_aws():
        secrets = boto3.client("secretsmanager", region_name="us-east-1")
        secrets.create_secret(Name="store", SecretString="5f0c9d2e8a7b4c1d9e3f6a2b8c4d7e1f")
        pools = boto3.client("cognito-idp", region_name="us-east-1")
        pool = pools.create_user_pool(PoolName="cairn")["UserPool"]["Id"]
        made: dict[str, str] = {}

        def calls() -> None:  # the store's secret read, an app client made for a registration
            secrets.get_secret_value(SecretId="store")
            made.update(
                pools.create_user_pool_client(UserPoolId=pool, ClientName="c", GenerateSecret=True)[
                    "UserPoolClient"
                ]
            )

        logger.setLevel(logging.DEBUG)
        try:
            out = written(logger, logging.Formatter("%(message)s"), calls)
        finally:
            logger.setLevel(level)
            logger.propagate = True
    assert '"SecretString": [SECRET_REDACTED]' in out and '"ClientSecret": [SECRET_REDACTED]' in out
    assert "5f0c9d2e8a7b4c1d9e3f6a2b8c4d7e1f" not in out and made["ClientSecret"] not in out


def test_httpx_s_request_line_names_no_credential_its_url_holds(installed: None) -> None:
    import httpx

    client = httpx.Client(transport=httpx.MockTransport(lambda _: httpx.Response(200, json={"keys": []})))
    logger = logging.getLogger("httpx")
    level = logger.level
    logger.setLevel(logging.INFO)
    url = "https://alice:s3cretPw99@issuer.example.test/jwks.json?token=T0k3n&kid=a"
    try:
        out = written(logger, logging.Formatter("%(message)s"), lambda: client.get(url))
    finally:
        logger.setLevel(level)
        logger.propagate = True
    assert "https://[CREDENTIALS_REDACTED]@issuer.example.test/jwks.json?token=[SECRET_REDACTED]&kid=a" in out
    assert "s3cretPw99" not in out and "T0k3n" not in out


UNCAUGHT = """
import threading
from cairn.entrypoints.cli import parser, process_limits
process_limits.prepare()
ENDPOINT = "http://awsuser:AwsEndpointPw77@127.0.0.1:9/"

def sweep():
    raise ConnectionError(f'Could not connect to the endpoint URL: "{ENDPOINT}"')

thread = threading.Thread(target=sweep, name="sweep")
thread.start()
thread.join()
raise ConnectionError(f'Could not connect to the endpoint URL: "{ENDPOINT}"')
"""


def test_an_exception_nothing_caught_is_printed_without_its_credentials() -> None:
    ended = subprocess.run([sys.executable, "-c", UNCAUGHT], capture_output=True, text=True, timeout=60)
    assert ended.returncode == 1 and "AwsEndpointPw77" not in ended.stderr
    assert "Exception in thread sweep:" in ended.stderr and "Traceback" in ended.stderr
    assert ended.stderr.count('"http://[CREDENTIALS_REDACTED]@127.0.0.1:9/"') == 2


def test_a_clean_record_keeps_its_arguments_and_its_exception(installed: None) -> None:
    records: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    logger = logging.getLogger("cairn.test.scrub.clean")
    handler = Keep()
    logger.addHandler(handler)
    try:
        try:
            raise ValueError("upto is not a count")
        except ValueError:
            logger.exception("document %s: %d chunks", "doc_1", 3)
    finally:
        logger.removeHandler(handler)
    (record,) = records
    assert record.args == ("doc_1", 3) and record.getMessage() == "document doc_1: 3 chunks"
    assert record.exc_info is not None and isinstance(record.exc_info[1], ValueError)


def test_install_wraps_the_factory_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made = logging.getLogRecordFactory()
    monkeypatch.setattr(log_scrub, "_installed", False)
    monkeypatch.setattr(logging.Handler, "handleError", logging.Handler.handleError)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    try:
        log_scrub.install()
        wrapped = logging.getLogRecordFactory()
        log_scrub.install()
        assert wrapped is not made and logging.getLogRecordFactory() is wrapped
    finally:
        logging.setLogRecordFactory(made)


def test_every_command_a_serving_process_and_each_function_install_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cairn.bootstrap import functions

    calls: list[str] = []
    monkeypatch.setattr(log_scrub, "install", lambda: calls.append("installed"))
    monkeypatch.setattr(functions, "api_handler", lambda make: make)
    monkeypatch.setattr(functions, "jobs_handler", lambda make: make)
    monkeypatch.delenv("CAIRN_BACKEND", raising=False)
    assert parser.main(["keys", "list", "--data-dir", str(tmp_path)]) == 2  # a one-off command (no store)
    process_limits.prepare()
    functions.api_function()
    functions.jobs_function()
    assert calls == ["installed"] * 4
