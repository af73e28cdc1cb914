"""Build the opensearch-py client the OpenSearch ChunkIndex takes (called by the composition root).

`auth="sigv4"` signs every request with the process's AWS credentials (opensearch-py's
AWSV4SignerAuth over RequestsHttpConnection; the signer asks the botocore credentials for a
frozen copy on each request, so a Lambda role's rotating credentials are followed). `auth="none"`
sends no signature: for a local cluster or one behind a proxy; user and password in the URL
(`https://admin:secret@localhost:9200`) become HTTP basic auth.
"""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from opensearchpy import AWSV4SignerAuth, OpenSearch, RequestsHttpConnection

Auth = Literal["sigv4", "none"]
ES_COMPATIBLE = "7.10.2"  # what a domain answers with `override_main_response_version` on


def opensearch_client(
    url: str,
    region: str,
    auth: Auth = "sigv4",
    *,
    service: str = "es",
    timeout: float = 10.0,
    pool_maxsize: int = 10,
    verify_certs: bool = True,
) -> OpenSearch:
    """A client for the cluster at `url` (`https://host[:port][/prefix]`).

    `service` is the SigV4 signing name: `es` for a managed domain, `aoss` for Serverless.
    `pool_maxsize` bounds the connections kept per host, shared by threads.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("the OpenSearch URL must be http(s)://host[:port][/prefix]")
    secure = parts.scheme == "https"
    options: dict[str, Any] = {
        "hosts": [{"host": parts.hostname, "port": parts.port or (443 if secure else 80)}],
        "use_ssl": secure,
        "verify_certs": secure and verify_certs,
        "ssl_show_warn": False,
        "connection_class": RequestsHttpConnection,
        "timeout": timeout,
        "max_retries": 2,
        "retry_on_timeout": True,
        "pool_maxsize": pool_maxsize,
    }
    if parts.path.strip("/"):
        options["url_prefix"] = parts.path.strip("/")
    if auth == "sigv4":
        options["http_auth"] = AWSV4SignerAuth(_credentials(), region, service)
    elif parts.username:
        options["http_auth"] = (unquote(parts.username), unquote(parts.password or ""))
    return OpenSearch(**options)


def _credentials() -> Any:
    import boto3  # only SigV4 needs it; kept off the import path of unsigned clients

    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise ValueError("SigV4 needs AWS credentials and none were found")
    return credentials


def cluster_version(client: OpenSearch) -> tuple[int, int]:
    """(major, minor) of the cluster; (0, 0) when it does not say which OpenSearch it is.

    A domain with `compatibility.override_main_response_version` on reports 7.10.2, which hides
    its real version: callers then treat it as too old for newer features.
    """
    version = client.info().get("version", {})
    number = str(version.get("number", ""))
    found = re.match(r"(\d+)\.(\d+)", number)
    if found is None or version.get("distribution") != "opensearch" or number == ES_COMPATIBLE:
        return (0, 0)
    return (int(found[1]), int(found[2]))
