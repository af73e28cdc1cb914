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
    if name == "Ref":
        return str(params.get(arg, {}).get("Default", "123456789012" if "Account" in arg else "x"))
    if name == "Fn::Sub":
        text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
        values = {k: resolve(v, params) for k, v in extra.items()}
        return re.sub(r"\$\{([^}]+)\}", lambda m: values.get(m[1]) or resolve({"Ref": m[1]}, params), text)
    if name == "Fn::If":
        return resolve(arg[1], params)
    return "x"


def environments() -> dict[str, dict[str, str]]:
    template, _ = decode_str(TEMPLATE.read_text())
    params = template["Parameters"]
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
