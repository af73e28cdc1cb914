"""SigV4 callers of the emulated stack's IAM API, for scripts/aws_local.py: each signature
recomputed and checked as API Gateway's IAM authorizer checks it (scripts/aws_local.py's
docstring), against the one local credential."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from starlette.requests import Request

SIGV4 = "AWS4-HMAC-SHA256"
SERVICE = "execute-api"
MAX_SKEW = timedelta(minutes=5)  # API Gateway's window for X-Amz-Date
MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS "
    "Secret Access Key and signing method. Consult the service documentation for details."
)
BAD_TOKEN = "The security token included in the request is invalid."


class Refused(Exception):
    """API Gateway's 403 for a SigV4 request it does not accept; the message is its body's."""


@dataclass(frozen=True)
class LocalIam:
    """The one IAM credential aws_local accepts, and the assumed-role session it stands for."""

    access_key: str = "AKIACAIRNLOCAL000000"
    secret_key: str = "cairn-local-secret"
    session_token: str | None = None
    account: str = "123456789012"
    role: str = "cairn-local-agents"
    session: str = "aws-local"

    def identity(self) -> dict[str, Any]:
        """`requestContext.authorizer.iam` as API Gateway fills it for an assumed-role caller."""
        role_id = "AROA" + hashlib.sha256(self.role.encode()).hexdigest()[:17].upper()
        return {
            "accessKey": self.access_key,
            "accountId": self.account,
            "callerId": f"{role_id}:{self.session}",
            "cognitoIdentity": None,
            "principalOrgId": None,
            "userArn": f"arn:aws:sts::{self.account}:assumed-role/{self.role}/{self.session}",
            "userId": f"{role_id}:{self.session}",
        }

    def verify(
        self,
        method: str,
        target: str,
        headers: Iterable[tuple[str, str]],
        body: bytes,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """The caller's identity if `Authorization` holds a valid signature of this request, else
        Refused. `target` is the path and query exactly as sent; `headers` are the raw pairs."""
        pairs = [(name.lower(), value) for name, value in headers]
        fields = _auth_fields(next((v for n, v in pairs if n == "authorization"), ""))
        key, date, region, service, terminal = (fields["Credential"].split("/") + [""] * 5)[:5]
        signed = fields["SignedHeaders"].split(";")
        if terminal != "aws4_request" or not region:
            raise Refused("Credential should be scoped to a valid region.")
        if service != SERVICE:
            raise Refused(f"Credential should be scoped to correct service: '{SERVICE}'.")
        if "host" not in signed:
            raise Refused("'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.")
        if not hmac.compare_digest(key.encode(), self.access_key.encode()):
            raise Refused(BAD_TOKEN)
        token = next((v for n, v in pairs if n == "x-amz-security-token"), None)
        if not hmac.compare_digest((token or "").encode(), (self.session_token or "").encode()):
            raise Refused(BAD_TOKEN)
        stamp = next((v for n, v in pairs if n == "x-amz-date"), "")
        try:
            when = datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        except ValueError:
            raise Refused(
                "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
            ) from None
        now = now or datetime.now(UTC)
        if abs(now - when) > MAX_SKEW:
            raise Refused(f"Signature expired: {stamp} is now earlier than the allowed 5 minute window.")
        if date != stamp[:8]:
            raise Refused(
                "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP."
            )

        host = next((v for n, v in pairs if n == "host"), "")
        aws = AWSRequest(method=method, url=f"http://{host}{target}", data=body)
        for name, value in pairs:
            if name in signed:
                aws.headers[name] = value  # appends: a repeated header keeps all its values
        aws.context["timestamp"] = stamp
        signer = SigV4Auth(Credentials(self.access_key, self.secret_key, self.session_token), service, region)
        canonical = signer.canonical_request(aws)
        listed = canonical.split("\n")[-2]
        body_hash = canonical.rsplit("\n", 1)[-1]
        # botocore leaves a few headers (user-agent, expect) out of any signature and trusts a
        # stated X-Amz-Content-SHA256: neither may differ from what the client signed and sent.
        if listed != fields["SignedHeaders"] or body_hash != hashlib.sha256(body).hexdigest():
            raise Refused(MISMATCH)
        expected = signer.signature(signer.string_to_sign(aws, canonical), aws)
        if not hmac.compare_digest(expected.encode(), fields["Signature"].encode()):
            raise Refused(MISMATCH)
        return self.identity()


def _auth_fields(authorization: str) -> dict[str, str]:
    scheme, _, rest = authorization.strip().partition(" ")
    fields: dict[str, str] = {}
    for part in rest.split(","):
        name, _, value = part.strip().partition("=")
        fields[name] = value
    for name in ("Credential", "SignedHeaders", "Signature"):
        if scheme != SIGV4 or not fields.get(name):
            raise Refused(f"Authorization header requires '{name}' parameter.")
    return fields


def sigv4_identity(request: Request, body: bytes, iam: LocalIam) -> dict[str, Any] | None:
    """The IAM identity of a SigV4-signed request (Refused if its signature is bad), None for any
    other request. What is verified is what came over the wire: raw path, query and headers."""
    if not request.headers.get("authorization", "").startswith(SIGV4):
        return None
    scope = request.scope
    sent = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
    target = scope["raw_path"].decode("latin-1")
    if scope["query_string"]:
        target += "?" + scope["query_string"].decode("latin-1")
    return iam.verify(request.method, target, sent, body)
