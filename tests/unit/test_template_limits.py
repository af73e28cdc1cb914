"""What template.yaml does to stay within Lambda's and the services' limits and to fail safe:
reserved concurrency on the task functions, state machines that time out and log their failures,
a user pool kept on delete with an MFA option, OpenSearch alarms on k-NN memory, the JVM heap and
CPU credits, and least privilege for IAM callers by default. The linters check the syntax; these
check the values and the conditions, evaluated as CloudFormation would."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode_str

from tests.unit.test_template_settings import conditions_of

ROOT = Path(__file__).resolve().parents[2]
TASKS = {
    "JobTaskFunction": "JobTaskConcurrency",
    "IngestTaskFunction": "IngestTaskConcurrency",
    "ConsolidationTaskFunction": "ConsolidationTaskConcurrency",
}
MACHINES = ("JobStateMachine", "IngestStateMachine", "ConsolidationStateMachine")


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    decoded, _ = decode_str((ROOT / "template.yaml").read_text())
    assert decoded is not None
    return dict(decoded)


def evaluate(template: dict[str, Any], **given: str) -> dict[str, bool]:
    params = {name: dict(spec) for name, spec in template["Parameters"].items()}
    for name, value in given.items():
        params[name]["Default"] = value
    return conditions_of(template, params)


@pytest.mark.parametrize(("function", "parameter"), sorted(TASKS.items()))
def test_each_task_function_reserves_its_concurrency_unless_told_zero(
    template: dict[str, Any], function: str, parameter: str
) -> None:
    reserved = template["Resources"][function]["Properties"]["ReservedConcurrentExecutions"]
    condition, value, otherwise = reserved["Fn::If"]

    assert value == {"Ref": parameter} and otherwise == {"Ref": "AWS::NoValue"}
    assert template["Parameters"][parameter]["Default"] > 0
    assert evaluate(template)[condition] is True
    assert evaluate(template, **{parameter: "0"})[condition] is False  # 0 would stop the function


def test_the_api_function_keeps_the_accounts_pool(template: dict[str, Any]) -> None:
    assert "ReservedConcurrentExecutions" not in template["Resources"]["ApiFunction"]["Properties"]


@pytest.mark.parametrize("machine", MACHINES)
def test_each_state_machine_times_out_and_logs_its_errors_without_data(
    template: dict[str, Any], machine: str
) -> None:
    props = template["Resources"][machine]["Properties"]
    logging = props["Logging"]
    (destination,) = logging["Destinations"]
    group = destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]
    group_props = template["Resources"][group]["Properties"]
    actions = {a for p in props["Policies"] if "Statement" in p for s in p["Statement"] for a in s["Action"]}
    definition = json.loads((ROOT / props["DefinitionUri"]).read_text().replace("${TaskFunctionArn}", "x"))
    task_timeout = max(
        template["Resources"][f]["Properties"]["Timeout"] for f in TASKS
    )  # a task may run this long, and retries

    assert logging["Level"] in ("ERROR", "ALL") and logging["IncludeExecutionData"] is False
    assert group_props["LogGroupName"]["Fn::Sub"].startswith("/aws/vendedlogs/states/")
    assert group_props["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert {"logs:CreateLogDelivery", "logs:PutResourcePolicy", "logs:DescribeLogGroups"} <= actions
    assert 4 * task_timeout <= definition["TimeoutSeconds"] <= 86400


def test_the_user_pool_outlives_the_stack_and_offers_mfa(template: dict[str, Any]) -> None:
    pool = template["Resources"]["UserPool"]
    mfa = template["Parameters"]["UserPoolMfa"]

    assert pool["DeletionPolicy"] == pool["UpdateReplacePolicy"] == "Retain"
    assert pool["Properties"]["MfaConfiguration"] == {"Ref": "UserPoolMfa"}
    assert mfa["Default"] == "OFF" and set(mfa["AllowedValues"]) == {"OFF", "OPTIONAL", "ON"}
    condition, factors, _ = pool["Properties"]["EnabledMfas"]["Fn::If"]
    assert factors == ["SOFTWARE_TOKEN_MFA"]
    assert evaluate(template)[condition] is False
    assert evaluate(template, UserPoolMfa="OPTIONAL")[condition] is True
    assert evaluate(template, UserPoolMfa="ON")[condition] is True


@pytest.mark.parametrize(
    ("given", "burstable"),
    [
        ({}, True),  # t3.small.search, the default
        ({"OpenSearchInstanceType": "t2.medium.search"}, True),
        ({"OpenSearchInstanceType": "r6g.large.search"}, False),
        (
            {"OpenSearchMode": "existing", "OpenSearchEndpoint": "https://x", "OpenSearchDomainName": "x"},
            False,
        ),
    ],
)
def test_cpu_credits_are_watched_only_on_a_burstable_domain_the_stack_creates(
    template: dict[str, Any], given: dict[str, str], burstable: bool
) -> None:
    alarm = template["Resources"]["SearchCpuCreditsAlarm"]
    assert alarm["Properties"]["MetricName"] == "CPUCreditBalance"
    assert evaluate(template, **given)[alarm["Condition"]] is burstable


def test_k_nn_memory_alarms_before_the_circuit_breaker_trips(template: dict[str, Any]) -> None:
    memory = template["Resources"]["SearchKnnMemoryAlarm"]["Properties"]
    breaker = template["Resources"]["SearchKnnCircuitBreakerAlarm"]["Properties"]
    jvm = template["Resources"]["SearchJvmPressureAlarm"]["Properties"]

    assert memory["MetricName"] == "KNNGraphMemoryUsagePercentage"
    assert memory["Threshold"] == {"Ref": "SearchKnnMemoryAlarmPercent"}
    assert 50 <= template["Parameters"]["SearchKnnMemoryAlarmPercent"]["Default"] < 100
    assert breaker["MetricName"] == "KNNCircuitBreakerTriggered" and breaker["Threshold"] == 1
    assert jvm["MetricName"] == "JVMMemoryPressure" and jvm["Statistic"] == "Maximum"
    for alarm in (memory, breaker, jvm):
        assert {d["Name"] for d in alarm["Dimensions"]} == {"DomainName", "ClientId"}


def test_iam_callers_are_not_admins_by_default(template: dict[str, Any]) -> None:
    assert template["Parameters"]["IamScopes"]["Default"].split(",") == ["documents:read", "documents:write"]
    assert template["Parameters"]["IamAdminRoleArns"]["Default"] == ""
    assert evaluate(template)["HasIamAdminRoles"] is False
    assert evaluate(template, IamAdminRoleArns="arn:aws:iam::123456789012:role/ops")["HasIamAdminRoles"]
