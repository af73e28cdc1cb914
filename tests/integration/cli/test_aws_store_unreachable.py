"""The AWS backend misconfigured or out of reach: one line naming what is wrong, exit 2, never a
traceback (whose text quoted the endpoint setting, a password in its URL too)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from botocore.exceptions import EndpointConnectionError


def test_an_aws_backend_missing_its_resources_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.entrypoints.cli.parser import main

    monkeypatch.setenv("CAIRN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CAIRN_BACKEND", "aws")
    code = main(["keys", "list"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: validation_error: CAIRN_BACKEND=aws needs every AWS resource")
    assert "CAIRN_TABLE" in err and err.count("\n") == 1


def test_an_aws_store_that_cannot_be_reached_is_one_line_without_the_endpoint_s_password(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.entrypoints.cli import brains
    from cairn.entrypoints.cli.parser import main

    def unreachable(args: argparse.Namespace) -> int:
        raise EndpointConnectionError(endpoint_url="http://ops:Hunter2Endpoint@10.0.0.1:4566/")

    monkeypatch.setenv("CAIRN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(brains, "cmd_keys", unreachable)
    code = main(["keys", "list"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: aws_unavailable: Could not connect to the endpoint URL")
    assert err.rstrip().endswith("(EndpointConnectionError)") and err.count("\n") == 1
    assert "Hunter2Endpoint" not in err and "10.0.0.1:4566" in err
