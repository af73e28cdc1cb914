"""What template.yaml gives operators and browsers: CORS answered by API Gateway on both APIs,
access logs, alarms on both APIs and the OpenSearch domain, and a tenant users cannot rewrite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode_str

TEMPLATE = Path(__file__).resolve().parents[2] / "template.yaml"


@pytest.fixture(scope="module")
def resources() -> dict[str, Any]:
    template, _ = decode_str(TEMPLATE.read_text())
    assert template is not None
    return dict(template["Resources"])


@pytest.mark.parametrize("api", ["HttpApi", "IamApi"])
def test_each_api_answers_preflights_and_logs_access(resources: dict[str, Any], api: str) -> None:
    props = resources[api]["Properties"]
    cors = props["CorsConfiguration"]
    assert {"authorization", "content-type", "mcp-session-id", "mcp-protocol-version"} <= set(
        cors["AllowHeaders"]
    )
    assert {"mcp-session-id", "www-authenticate"} <= set(cors["ExposeHeaders"])
    assert "OPTIONS" in cors["AllowMethods"]
    group = props["AccessLogSettings"]["DestinationArn"]["Fn::GetAtt"][0]
    assert resources[group]["Type"] == "AWS::Logs::LogGroup"
    assert "RetentionInDays" in resources[group]["Properties"]


def test_users_cannot_write_their_own_tenant(resources: dict[str, Any]) -> None:
    client = resources["UserPoolClient"]["Properties"]
    assert "custom:tenant" not in client["WriteAttributes"]
    assert "custom:tenant" in client["ReadAttributes"]


def test_alarms_watch_both_apis_and_the_search_domain(resources: dict[str, Any]) -> None:
    alarms = {name: r["Properties"] for name, r in resources.items() if r["Type"] == "AWS::CloudWatch::Alarm"}
    api_5xx = {a["Dimensions"][0]["Value"]["Ref"] for a in alarms.values() if a["MetricName"] == "5xx"}
    assert api_5xx == {"HttpApi", "IamApi"}
    search = {a["MetricName"] for a in alarms.values() if a["Namespace"] == "AWS/ES"}
    # The metric names of OpenSearch Service's CloudWatch metrics (namespace AWS/ES): k-NN memory
    # and its circuit breaker, the JVM heap, CPU and, on burstable instances, CPU credits.
    assert search == {
        "ClusterStatus.red",
        "FreeStorageSpace",
        "KNNGraphMemoryUsagePercentage",
        "KNNCircuitBreakerTriggered",
        "JVMMemoryPressure",
        "CPUUtilization",
        "CPUCreditBalance",
    }
    assert all(
        resources[n].get("Condition") in ("CreateDomain", "BurstableDomain")
        for n, a in alarms.items()
        if a["Namespace"] == "AWS/ES"
    )
    assert len(alarms) == 17  # docs/AWS.md and docs/DEPLOY.md give this number


def test_browsers_may_post_presigned_uploads_and_follow_read_redirects_to_the_bucket(
    resources: dict[str, Any],
) -> None:
    (rule,) = resources["DocumentBucket"]["Properties"]["CorsConfiguration"]["CorsRules"]
    assert rule["AllowedMethods"] == ["GET", "POST"] and rule["AllowedOrigins"] == {"Ref": "CorsAllowOrigins"}
