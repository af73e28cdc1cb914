"""template.yaml's Rules, evaluated as CloudFormation evaluates them before creating anything:
each parameter set a half-configured deploy could use is refused with its message, and the
defaults (and each valid alternative) pass. The linters check the syntax; this checks the logic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode_str

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


def load() -> dict[str, Any]:
    template, _ = decode_str(TEMPLATE.read_text())
    assert template is not None
    return dict(template)


def parameters(template: dict[str, Any], **given: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, spec in template["Parameters"].items():
        raw = given.get(name, str(spec.get("Default", "")))
        values[name] = raw.split(",") if spec["Type"] == "CommaDelimitedList" else raw
    return values


def value(node: Any, params: dict[str, Any]) -> Any:
    """The rule functions CloudFormation allows in Rules (Fn::Equals, Not, And, Or, EachMember*)."""
    if not isinstance(node, dict):
        return node
    ((name, arg),) = node.items()
    if name == "Ref":
        return params[arg]
    args = [value(a, params) for a in arg] if isinstance(arg, list) else value(arg, params)
    if name == "Fn::Equals":
        return args[0] == args[1]
    if name == "Fn::Not":
        return not args[0]
    if name == "Fn::And":
        return all(args)
    if name == "Fn::Or":
        return any(args)
    if name == "Fn::EachMemberEquals":
        return all(member == args[1] for member in args[0])
    if name == "Fn::EachMemberIn":
        return all(member in args[1] for member in args[0])
    raise AssertionError(f"a rule function this test does not know: {name}")


def refusals(**given: str) -> list[str]:
    """The AssertDescription of every failing assertion, as CloudFormation would report them."""
    template = load()
    params = parameters(template, **given)
    failed = []
    for rule in template["Rules"].values():
        if "RuleCondition" in rule and not value(rule["RuleCondition"], params):
            continue
        failed += [a["AssertDescription"] for a in rule["Assertions"] if not value(a["Assert"], params)]
    return failed


@pytest.mark.parametrize(
    "given",
    [
        {},
        {"OpenSearchMode": "existing", "OpenSearchEndpoint": "https://search-x.es.amazonaws.com",
         "OpenSearchDomainName": "x"},
        {"JwtIssuer": "https://issuer.example.com", "JwtAudience": "https://cairn.example.com/mcp"},
        {"IamScopes": "documents:read", "MachineClientScopes": "documents:read,brains:admin"},
        {"RelevanceMidpoint": "0.31", "RelevanceSlope": "9.5"},
    ],
)  # fmt: skip
def test_the_defaults_and_each_complete_alternative_deploy(given: dict[str, str]) -> None:
    assert refusals(**given) == []


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"OpenSearchMode": "existing"}, "OpenSearchEndpoint"),
        ({"OpenSearchMode": "existing", "OpenSearchEndpoint": "https://search-x.es.amazonaws.com"},
         "OpenSearchDomainName"),
        ({"OpenSearchEndpoint": "https://search-x.es.amazonaws.com"}, "with create, leave them empty"),
        ({"JwtIssuer": "https://issuer.example.com"}, "needs JwtAudience"),
        ({"IamScopes": "documents:read,root"}, "IamScopes lists scopes"),
        ({"MachineClientScopes": "documents:*"}, "MachineClientScopes lists scopes"),
        ({"RelevanceMidpoint": "0.31"}, "RelevanceMidpoint and RelevanceSlope go together"),
        ({"RelevanceSlope": "9.5"}, "RelevanceMidpoint and RelevanceSlope go together"),
    ],
)  # fmt: skip
def test_a_half_configured_stack_is_refused_naming_the_parameter(given: dict[str, str], named: str) -> None:
    failed = refusals(**given)
    assert failed and any(named in message for message in failed), failed
