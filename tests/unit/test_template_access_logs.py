"""What template.yaml's API access logs record of a request: the route it took, never the path or
the query it was sent with, where a client's mistake (a token pasted as a path segment, a key in
a query) would be kept in CloudWatch for anyone who reads the logs."""

from __future__ import annotations

import json

from tests.unit.test_template_rules import load

SECRET_BEARING = ("$context.path", "$context.requestOverride", "$context.identity.apiKey")


def test_every_access_log_records_the_route_and_no_request_path() -> None:
    template = load()
    formats = [
        resource["Properties"]["AccessLogSettings"]["Format"]
        for resource in template["Resources"].values()
        if "AccessLogSettings" in resource.get("Properties", {})
    ]
    assert len(formats) == 2  # the authorised API and the IAM one
    for line in formats:
        fields = json.loads(line)  # one JSON object per request, as CloudWatch Insights parses it
        assert fields["route"] == "$context.routeKey"
        assert not any(variable in line for variable in SECRET_BEARING), line
