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


def resolve(value: Any, params: dict[str, Any], conditions: dict[str, bool] | None = None) -> str:
    """A stand-in for CloudFormation: Refs to parameters take their defaults, Subs fill placeholders,
    an If takes the branch its condition (evaluated from the parameters) picks."""
    if isinstance(value, (str, int, float)):
        return str(value)
    ((name, arg),) = value.items()
    if name == "Ref":  # a parameter's default; a resource's own logical id stands for its physical id
        if arg in params:
            return str(params[arg].get("Default", "x"))
        return "123456789012" if "Account" in arg else arg if "::" not in arg else "x"
    if name == "Fn::Sub":
        text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
        values = {k: resolve(v, params, conditions) for k, v in extra.items()}
        return re.sub(r"\$\{([^}]+)\}", lambda m: values.get(m[1]) or resolve({"Ref": m[1]}, params), text)
    if name == "Fn::If":
        condition, yes, no = arg
        taken = yes if conditions is None or conditions[condition] else no
        return resolve(taken, params, conditions)
    if name == "Fn::Join":
        separator, items = arg
        parts = resolve(items, params).split(",") if isinstance(items, dict) else items
        return str(separator).join(resolve(part, params, conditions) for part in parts)
    if name == "Fn::Select":
        index, ((_, (separator, source)),) = arg[0], arg[1].items()  # a Select of a Split
        return resolve(source, params).split(separator)[int(index)]
    return "x"


def conditions_of(template: dict[str, Any], params: dict[str, Any]) -> dict[str, bool]:
    """The template's Conditions, evaluated as CloudFormation would with these parameters."""

    def truth(node: Any) -> Any:
        if not isinstance(node, dict):
            return node
        ((name, arg),) = node.items()
        if name == "Condition":
            return truth(template["Conditions"][arg])
        if name == "Fn::Equals":
            return str(truth(arg[0])) == str(truth(arg[1]))
        if name == "Fn::Not":
            return not truth(arg[0])
        if name == "Fn::And":
            return all(truth(a) for a in arg)
        if name == "Fn::Or":
            return any(truth(a) for a in arg)
        return resolve(node, params)

    return {name: bool(truth(node)) for name, node in template["Conditions"].items()}


def environments(**parameters: str) -> dict[str, dict[str, str]]:
    """Each function's environment with the parameters' defaults, or the values given here."""
    template, _ = decode_str(TEMPLATE.read_text())
    params = template["Parameters"]
    for key, value in parameters.items():
        params[key]["Default"] = value
    conditions = conditions_of(template, params)
    shared = template["Globals"]["Function"]["Environment"]["Variables"]
    out = {}
    for name, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function":
            own = resource["Properties"].get("Environment", {}).get("Variables", {})
            out[name] = {k: resolve(v, params, conditions) for k, v in {**shared, **own}.items()}
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
    # SigV4 callers of the deploying account read and write by default (IamScopes); none is an admin.
    assert settings.iam_scopes == {"123456789012": ["documents:read", "documents:write"]}


def test_iam_scopes_follow_the_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in environments(IamScopes="documents:read")["ApiFunction"].items():
        monkeypatch.setenv(key, value)
    assert Settings().iam_scopes == {"123456789012": ["documents:read"]}


def test_the_job_function_knows_the_consolidation_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in environments(ConsolidationSchedule="rate(6 hours)")["JobTaskFunction"].items():
        monkeypatch.setenv(key, value)
    assert Settings().consolidation_schedule == "rate(6 hours)"


def test_named_roles_get_brains_admin_beside_the_accounts_scopes(monkeypatch: pytest.MonkeyPatch) -> None:
    admins = "arn:aws:iam::123456789012:role/cairn-admins,arn:aws:iam::123456789012:role/ops"
    for key, value in environments(IamAdminRoleArns=admins)["ApiFunction"].items():
        monkeypatch.setenv(key, value)
    everything = ["documents:read", "documents:write", "brains:admin"]
    assert Settings().iam_scopes == {
        "123456789012": ["documents:read", "documents:write"],
        "arn:aws:iam::123456789012:role/cairn-admins": everything,
        "arn:aws:iam::123456789012:role/ops": everything,
    }


def test_the_aws_default_queues_ingests_above_64_kib(monkeypatch: pytest.MonkeyPatch) -> None:
    """The API call must end within 29 s (docs/PERFORMANCE.md, "Synchronous ingest on AWS")."""
    for key, value in environments()["ApiFunction"].items():
        monkeypatch.setenv(key, value)
    assert Settings().ingest_queue_bytes == 64 * 1024  # bench/sync_ingest_budget.py picks it
