"""Every function's environment in template.yaml, with the template's defaults, is valid Settings."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode_str

from cairn.config import Settings

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


def resolve(value: Any, params: dict[str, Any]) -> str:
    """A stand-in for CloudFormation: Refs to parameters take their defaults, Subs fill placeholders."""
    if isinstance(value, (str, int, float)):
        return str(value)
    ((name, arg),) = value.items()
    if name == "Ref":  # a parameter's default; a resource's own logical id stands for its physical id
        if arg in params:
            return str(params[arg].get("Default", "x"))
        return "123456789012" if "Account" in arg else arg if "::" not in arg else "x"
    if name == "Fn::Sub":
        text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
        values = {k: resolve(v, params) for k, v in extra.items()}
        return re.sub(r"\$\{([^}]+)\}", lambda m: values.get(m[1]) or resolve({"Ref": m[1]}, params), text)
    if name == "Fn::If":
        return resolve(arg[1], params)
    if name == "Fn::Join":
        separator, items = arg
        parts = resolve(items, params).split(",") if isinstance(items, dict) else items
        return str(separator).join(resolve(part, params) for part in parts)
    return "x"


def environments(**parameters: str) -> dict[str, dict[str, str]]:
    """Each function's environment with the parameters' defaults, or the values given here."""
    template, _ = decode_str(TEMPLATE.read_text())
    params = template["Parameters"]
    for key, value in parameters.items():
        params[key]["Default"] = value
    shared = template["Globals"]["Function"]["Environment"]["Variables"]
    out = {}
    for name, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function":
            own = resource["Properties"].get("Environment", {}).get("Variables", {})
            out[name] = {k: resolve(v, params) for k, v in {**shared, **own}.items()}
    return out


@pytest.mark.parametrize("function", sorted(environments()))
def test_the_function_environment_is_valid_settings(function: str, monkeypatch: pytest.MonkeyPatch) -> None:
    env = environments()[function]
    for key, value in env.items():
        monkeypatch.setenv(key, value)

    settings = Settings()

    assert settings.backend == "aws" and settings.bedrock_embedding_dim == 1024
    assert set(settings.state_machine_arns) == {"job", "ingest", "consolidate"}
    assert settings.iam_tenants == {"123456789012": "dev"} and settings.jwt_default_tenant == "dev"
    assert json.loads(env["CAIRN_STATE_MACHINE_ARNS"])["ingest"].endswith(":stateMachine:cairn-ingest-dev")
    # SigV4 callers of the deploying account get every scope by default (IamScopes).
    assert settings.iam_scopes == {"123456789012": ["documents:read", "documents:write", "brains:admin"]}


def test_iam_scopes_follow_the_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in environments(IamScopes="documents:read")["ApiFunction"].items():
        monkeypatch.setenv(key, value)
    assert Settings().iam_scopes == {"123456789012": ["documents:read"]}


def test_the_job_function_knows_the_consolidation_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in environments(ConsolidationSchedule="rate(6 hours)")["JobTaskFunction"].items():
        monkeypatch.setenv(key, value)
    assert Settings().consolidation_schedule == "rate(6 hours)"
