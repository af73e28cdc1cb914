"""template.yaml read the way CloudFormation would deploy it with every parameter at its default,
for scripts/aws_local.py: a function's environment, the Cognito app clients and their scopes.

The emulation takes the API function's settings from here rather than from a copy, so its JWT
rules, tenants, scopes and thresholds are the deployed stack's and cannot drift from them. What
stands for an AWS resource is local: a Cognito pool, app client or domain is the emulation's own
Cognito stand-in (scripts/aws_local_cognito.py), and the URLs of the real ones
(`https://cognito-idp.<region>.amazonaws.com/<pool>`, `https://<domain>.auth.<region>.amazoncognito.com`)
are rewritten to the stand-in's; any other resource gets a placeholder name (the bucket, table,
OpenSearch and Step Functions values are replaced from infra/local/env.json by the caller).

Intrinsics: Ref, Fn::Sub (both forms), Fn::If, Fn::Equals, Fn::Not, Fn::And, Fn::Or, Condition,
Fn::Join, Fn::Split, Fn::Select, Fn::GetAtt, AWS::NoValue; anything else is refused by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfnlint.decode import decode_str

NO_VALUE = object()
COGNITO_CLIENT = "AWS::Cognito::UserPoolClient"
_SUB = re.compile(r"\$\{([^}]*)\}")


class TemplateError(ValueError):
    """Something in template.yaml the emulation cannot resolve (named, so it is fixed here)."""


@dataclass(frozen=True)
class LocalStack:
    """Where the emulated stack lives: the values of the pseudo parameters and the stand-ins' URLs."""

    region: str
    account: str
    cognito_url: str
    """Base URL of the Cognito stand-in: its pool's issuer is `<cognito_url>/<pool id>`, its token
    endpoint `<cognito_url>/oauth2/token`."""

    @property
    def pool_id(self) -> str:
        return f"{self.region}_CairnLocal"

    @property
    def issuer(self) -> str:
        return f"{self.cognito_url}/{self.pool_id}"


def client_id(logical: str) -> str:
    """A local app client's id: stable across restarts, lower-case letters as Cognito's are."""
    return f"local{logical.lower()}"


class Template:
    def __init__(self, path: Path, stack: LocalStack, overrides: dict[str, str] | None = None) -> None:
        self.doc: dict[str, Any] = decode_str(path.read_text())[0]
        self.stack = stack
        parameters = self.doc.get("Parameters", {})
        self.overrides = {k: v for k, v in (overrides or {}).items() if k in parameters}
        """Parameter values instead of the defaults (an override of a parameter the template does
        not declare is dropped: the emulation's own IamAdminRoleArns default, on an older template)."""
        self.resources: dict[str, Any] = self.doc.get("Resources", {})

    def parameter(self, name: str) -> Any:
        spec = self.doc.get("Parameters", {}).get(name)
        if spec is None:
            raise TemplateError(f"template.yaml has no parameter {name}")
        default = self.overrides.get(name, spec.get("Default", ""))
        if str(spec.get("Type", "")).startswith(("CommaDelimitedList", "List<")):
            return [part.strip() for part in str(default).split(",")] if str(default) else [""]
        return str(default)

    def condition(self, name: str) -> bool:
        spec = self.doc.get("Conditions", {}).get(name)
        if spec is None:
            raise TemplateError(f"template.yaml has no condition {name}")
        return bool(self.resolve(spec))

    def ref(self, name: str) -> Any:
        pseudo = {
            "AWS::Region": self.stack.region,
            "AWS::AccountId": self.stack.account,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": "cairn-local",
            "AWS::NoValue": NO_VALUE,
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.doc.get("Parameters", {}):
            return self.parameter(name)
        resource = self.resources.get(name)
        if resource is None:
            raise TemplateError(f"template.yaml refers to {name}, which it does not declare")
        kind = resource.get("Type", "")
        if kind == "AWS::Cognito::UserPool":
            return self.stack.pool_id
        if kind == COGNITO_CLIENT:
            return client_id(name)
        if kind == "AWS::Cognito::UserPoolDomain":
            return str(self.resolve(resource["Properties"]["Domain"]))
        return f"{name.lower()}-local"

    def resolve(self, node: Any) -> Any:
        if isinstance(node, list):
            return [v for v in (self.resolve(item) for item in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) != 1:
            return {k: v for k, v in ((k, self.resolve(v)) for k, v in node.items()) if v is not NO_VALUE}
        ((name, arg),) = node.items()
        if name == "Ref":
            return self.ref(str(arg))
        if name == "Condition":
            return self.condition(str(arg))
        if name == "Fn::If":
            return self.resolve(arg[1] if self.condition(str(arg[0])) else arg[2])
        if name == "Fn::Equals":
            left, right = (self.resolve(a) for a in arg)
            return str(left) == str(right) if not isinstance(left, list) else left == right
        if name == "Fn::Not":
            return not self.resolve(arg[0])
        if name == "Fn::And":
            return all(self.resolve(a) for a in arg)
        if name == "Fn::Or":
            return any(self.resolve(a) for a in arg)
        if name == "Fn::Join":
            return str(arg[0]).join(str(v) for v in self.resolve(arg[1]))
        if name == "Fn::Split":
            return str(self.resolve(arg[1])).split(str(arg[0]))
        if name == "Fn::Select":
            return self.resolve(arg[1])[int(self.resolve(arg[0]))]
        if name == "Fn::GetAtt":
            logical, attribute = arg if isinstance(arg, list) else str(arg).split(".", 1)
            return self.get_att(str(logical), str(attribute))
        if name == "Fn::Sub":
            text, variables = (arg, {}) if isinstance(arg, str) else (arg[0], arg[1])
            return self.sub(str(text), {k: self.resolve(v) for k, v in variables.items()})
        if name.startswith("Fn::"):
            raise TemplateError(f"scripts/aws_local_template.py cannot resolve {name}")
        return {name: self.resolve(arg)}

    def get_att(self, logical: str, attribute: str) -> str:
        if logical not in self.resources:
            raise TemplateError(f"template.yaml refers to {logical}.{attribute}, which it does not declare")
        return f"{logical.lower()}-{attribute.lower().replace('.', '-')}-local"

    def sub(self, text: str, variables: dict[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in variables:
                return str(variables[name])
            if "." in name:
                return self.get_att(*name.split(".", 1))
            return str(self.ref(name))

        return _SUB.sub(one, text)

    def local_urls(self, value: str) -> str:
        """`value` with the real Cognito endpoints the template names replaced by the stand-in's."""
        region, stack = self.stack.region, self.stack
        value = value.replace(f"https://cognito-idp.{region}.amazonaws.com/{stack.pool_id}", stack.issuer)
        for logical, resource in self.resources.items():
            if resource.get("Type") == "AWS::Cognito::UserPoolDomain" and self._exists(logical):
                domain = f"https://{self.ref(logical)}.auth.{region}.amazoncognito.com"
                value = value.replace(domain, stack.cognito_url)
        return value

    def _exists(self, logical: str) -> bool:
        condition = self.resources[logical].get("Condition")
        return condition is None or self.condition(str(condition))

    def environment(self, function: str) -> dict[str, str]:
        """The function's environment variables: the Globals' and its own, resolved."""
        if function not in self.resources:
            raise TemplateError(f"template.yaml has no function {function}")
        shared = self.doc.get("Globals", {}).get("Function", {}).get("Environment", {}).get("Variables", {})
        own = self.resources[function].get("Properties", {}).get("Environment", {}).get("Variables", {})
        env: dict[str, str] = {}
        for key, node in {**shared, **own}.items():
            value = self.resolve(node)
            if value is NO_VALUE:
                continue
            if isinstance(value, (list, dict)):
                raise TemplateError(f"{function}'s {key} resolves to {type(value).__name__}, not a string")
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            env[str(key)] = self.local_urls(text)
        return env

    def app_clients(self) -> dict[str, dict[str, Any]]:
        """Every Cognito app client the stack creates, by logical id: its resolved properties."""
        return {
            logical: self.resolve(resource.get("Properties", {}))
            for logical, resource in self.resources.items()
            if resource.get("Type") == COGNITO_CLIENT and self._exists(logical)
        }
