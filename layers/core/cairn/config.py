"""The one settings class. Only composition roots (bootstrap, CLI) read it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import httpx
from pydantic import AliasChoices, BeforeValidator, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

MiB = 1024 * 1024


def _int_from_env(value: object) -> object:
    """Environment variables are strings; a Literal of ints only matches ints."""
    return int(value) if isinstance(value, str) and value.strip().isdigit() else value


def _blank_is_none(value: object) -> object:
    """An empty setting is no setting (a deploy template's empty parameter)."""
    return None if isinstance(value, str) and not value.strip() else value


def _has_userinfo(url: str) -> bool:
    """Whether the model adapters' HTTP client (adapters/endpoints.py) would send a user and
    password from `url`: read by the same parser."""
    try:
        return bool(httpx.URL(url).userinfo)
    except httpx.InvalidURL:  # not a URL: the adapter that uses it says so
        return False


def _credential(value: object) -> object:
    """A token or API key (domain/text.py checked_credential); blank is no setting."""
    from cairn.domain.text import checked_credential

    if isinstance(value, SecretStr):
        value = value.get_secret_value()
    if not isinstance(value, str) or not value.strip():
        return _blank_is_none(value)
    return checked_credential(value, "the value")


Credential = Annotated[SecretStr | None, BeforeValidator(_credential)]


def _uri_list(value: object) -> object:
    """A JSON list, or URIs separated by commas (a deploy template's CommaDelimitedList); blanks dropped."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            import json

            value = json.loads(text)
        else:
            value = text.split(",")
    if isinstance(value, list):
        return [v.strip() for v in value if not (isinstance(v, str) and not v.strip())]
    return value


def default_data_dir() -> Path:
    """One store per user, so `cairn serve` and `cairn mcp` started from anywhere share it."""
    from platformdirs import user_data_path

    return user_data_path("cairn", appauthor=False)


class Settings(BaseSettings):
    # no value in an error: a refused setting may be a secret (a token read with its line break)
    model_config = SettingsConfigDict(
        env_prefix="CAIRN_", extra="ignore", populate_by_name=True, hide_input_in_errors=True
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    """Default: the user's data directory (`~/.local/share/cairn` on Linux, `~/Library/Application
    Support/cairn` on macOS, `%LOCALAPPDATA%\\cairn` on Windows), whatever the current directory."""
    host: str = "127.0.0.1"
    port: int = 8080
    warm_surfaces: bool = True
    """`cairn serve` builds every MCP surface in the background once it answers, so a surface's
    first call does not pay for its build (entrypoints/mcp/warm_surfaces.py); false: each is built
    on its first call, and a server never called over MCP never loads the MCP SDK."""

    # Authentication (docs/AUTH.md). With none of token / JWT configured, the embedded server is
    # open, but only on a loopback address unless allow_open says otherwise.
    token: Credential = None
    """A static bearer token (`cairn serve --token`, CAIRN_TOKEN) granting every scope in `token_tenant`."""
    token_tenant: str = "local"
    allow_open: bool = False
    """Serve without authentication beyond loopback (or, on AWS, requests without an authorizer)."""
    jwt_issuer: str | None = None
    jwt_audience: list[str] = Field(default_factory=list)
    """Audiences a token may carry (RFC 8707: this server's resource URL or client id)."""
    jwt_id_token_audience: Annotated[
        list[str] | None, NoDecode, BeforeValidator(lambda v: _uri_list(_blank_is_none(v)))
    ] = None
    """The app clients whose ID tokens (`token_use: id`) are taken as bearer credentials; None:
    any of jwt_audience. An ID token carries no scope, so it gets all of its user's group scopes:
    a client users sign in to through another app (the code flow, narrowed to the scopes asked
    for) should not be listed."""
    jwt_jwks_url: str | None = None
    """Default: `<issuer>/.well-known/jwks.json`."""
    jwt_tenant_claim: str = "tenant"
    jwt_default_tenant: str | None = None
    jwt_leeway_s: float = Field(default=60.0, ge=0, le=600)
    iam_tenants: dict[str, str] = Field(default_factory=dict)
    """SigV4 callers: account id or role/user ARN prefix -> tenant (the longest match wins)."""
    iam_scopes: dict[str, list[str]] = Field(
        default_factory=lambda: {"*": ["documents:read", "documents:write"]}
    )
    """SigV4 callers' scopes, keyed like iam_tenants (`*`: any mapped caller)."""
    jwt_scope_prefix: str | None = None
    """Stripped from scope names first (a Cognito resource server's `<id>/documents:read`)."""
    jwt_user_groups: bool = False
    """A user's token gets only its groups' scopes (auth/claims.py); machine tokens their `scope`."""
    # Remote sign-in (docs/AUTH.md, docs/SIGN_IN.md): Cairn as the MCP clients' authorization server.
    cognito_domain: Annotated[str | None, BeforeValidator(_blank_is_none)] = None
    """The user pool's sign-in domain (`https://<prefix>.auth.<region>.amazoncognito.com`, or a
    custom one). With jwt_issuer set, Cairn serves its own authorization-server metadata naming the
    domain's /oauth2 endpoints, and its resource metadata names Cairn as the authorization server."""
    cognito_user_pool_id: Annotated[str | None, BeforeValidator(_blank_is_none)] = None
    """The pool dynamic client registration (`POST /register`) makes app clients in; unset: none."""
    oauth_registration: bool = True
    """Serve dynamic client registration when the pool is known (false: clients need a client id)."""
    oauth_allowed_redirects: Annotated[list[str], NoDecode, BeforeValidator(_uri_list)] = Field(
        default_factory=list
    )
    """Redirect URIs registration accepts beyond loopback and the known clients' callbacks: exact
    URIs, or prefixes ending in `*` (JSON list or comma-separated)."""
    oauth_registrations_per_hour: int = Field(default=10, ge=0)
    """Client registrations per source address per hour (0: unlimited)."""
    oauth_max_clients: int = Field(default=500, ge=0)
    """Live registered clients at most (0: no cap); Cognito's default quota is 1,000 per pool."""
    oauth_unused_client_hours: float = Field(default=24, ge=0)
    """With the cap reached, a registration first takes back the places of clients registered this
    many hours ago or more that no token has come from yet (0: never; revoke them by hand)."""
    ui_client_id: Annotated[str | None, BeforeValidator(_blank_is_none)] = None
    """The user pool app client the web UI signs users in with (authorization code + PKCE, no
    secret; its callback is `<base>/ui/callback`). With cognito_domain and jwt_issuer set, /ui offers
    "Sign in with your Cairn account" (docs/SIGN_IN.md, "Web UI sign-in"). Its tokens must be
    accepted: list it in jwt_audience."""
    rate_limit_per_s: float | None = Field(default=None, ge=0)
    """Requests per second per authenticated principal on the embedded server (0: unlimited; unset:
    50). The open loopback owner is limited only when this is set explicitly. Burst below."""
    rate_limit_burst: int = Field(default=100, ge=1)
    max_in_flight: int | None = Field(default=None, ge=0)
    """Requests one authenticated principal may have running at once on the embedded server (0:
    unlimited; unset: 16); past them, 429 with Retry-After. Change streams do not count. The open
    loopback owner is limited only when this or the rate is set explicitly."""
    auth_failures_per_min: float = Field(default=10, ge=0)
    """Refused credentials a client address may send a minute on the embedded server, once it has
    sent `auth_failure_burst` of them; past that, its credentials are not checked until the
    minute allows one again (429). 0: unlimited. Only a server that wants credentials counts."""
    auth_failure_burst: int = Field(default=20, ge=1)
    forwarded_allow_ips: str | None = None
    """`cairn serve` behind a reverse proxy: the addresses (comma-separated; `*` any) whose
    X-Forwarded-For and X-Forwarded-Proto it believes, so refused credentials are counted by the
    client's address, not the proxy's. Unset: none, each request is its connection's address
    (uvicorn would believe any process on loopback, which could then pose as endless addresses)."""
    public_url: str | None = None
    zengram_brain: str | None = None
    thoughtmcp_brain: str | None = None
    """The brain ThoughtMCP's memories live in (default: the default brain; a first remember makes one)."""
    """The brain zengram's API and `brain_*` tools serve (id or slug); default: a key's only brain,
    else the default brain, else "Shared Brain", created by the first store."""
    """This server's base URL as clients see it (resource metadata); default: from the request."""
    zengram_research_enabled: bool = Field(
        default=False,
        validation_alias=AliasChoices("CAIRN_ZENGRAM_RESEARCH_ENABLED", "RESEARCH_ENABLED"),
    )
    """Serve zengram's `POST /research` (`brain_research`): a loop of several generator calls,
    off by default as in zengram; while off it answers 503 `research_disabled`, whose message names
    zengram's own switch, `RESEARCH_ENABLED`, honoured here too."""

    default_brain: str | None = Field(
        default=None, validation_alias=AliasChoices("JBMCP_DEFAULT_BRAIN", "CAIRN_DEFAULT_BRAIN")
    )

    backend: Literal["local", "aws"] = "local"
    """`local`: SQLite, files, ONNX in the data directory. `aws`: S3, DynamoDB, OpenSearch, Bedrock,
    Step Functions, named by the settings below (the SAM template sets them on every function)."""
    aws_region: str = "us-east-1"
    aws_endpoint_url: str | None = None
    """Send every AWS client to this endpoint (a moto server for local emulation)."""
    aws_local_fallbacks: bool = False
    """Local emulation only (scripts/aws_local.py, `sam local`): a port whose AWS resource is not
    configured uses its embedded adapter under data_dir. Otherwise `backend = "aws"` refuses to
    start without the bucket, table, OpenSearch URL and state machines."""
    bucket: str | None = None
    table: str | None = None
    store_secret_id: str | None = None
    """The Secrets Manager secret (ARN or name) the AWS stack's processes share (template.yaml's
    StoreSecret): what the audit's erasure marks are keyed with. The embedded store keeps its own in
    the data directory (`store-secret.key`)."""
    opensearch_url: str | None = None
    opensearch_auth: Literal["sigv4", "none"] = "sigv4"
    opensearch_index_prefix: str = "cairn-chunks"
    opensearch_pipeline: str = "cairn-hybrid-rrf"
    opensearch_fusion: Literal["pipeline", "client"] = "pipeline"
    """`pipeline`: the score-ranker-processor RRF fuses server-side where the cluster can (equal
    leg weights from 2.19, weighted from 3.1), else the adapter fuses; `client`: always fuse here."""
    embedder: Literal["onnx", "bedrock"] = "onnx"
    bedrock_embedding_model: str = "amazon.titan-embed-text-v2:0"
    bedrock_embedding_dim: Annotated[Literal[1024, 512, 256], BeforeValidator(_int_from_env)] = 1024
    bedrock_generation_model: str = "amazon.nova-lite-v1:0"
    state_machine_arns: dict[str, str] = Field(default_factory=dict)
    """Job kind -> Step Functions state machine ARN (`ingest`, `consolidate`, `job` for the rest)."""

    onnx_threads: int = 0
    """Intra-op threads for onnxruntime. 0 (the default): one thread a run and `onnx_workers` at
    least one run per core. A query is one short run; with onnxruntime's own pool (2 threads here)
    its threads spin after each run and take the core a search needs next (memory_search at a
    million chunks, in-process under load: p50 27 ms with the pool, 11.6 ms with one thread)."""
    onnx_workers: int = Field(default=1, ge=1)
    """Texts of one embed() call run at once, each on its own thread (at least one per core when
    `onnx_threads` is 0)."""
    query_vector_cache: int = Field(default=2048, ge=0)
    """Texts whose vectors the searches keep, the least recently used leaving first (about 1.5 KB
    each on the local model, 4 KB on Titan); 0 keeps none (adapters/vector_cache.py)."""

    # Ingest
    ingest_root: Path | None = None
    """HTTP memory_ingest_file reads only below this directory (default: data_dir/ingest)."""
    max_content_chars: int = 5_000_000
    max_json_body_bytes: int | None = Field(default=None, ge=1024)
    """The cap on a JSON request body (REST and /mcp), refused with 413 before it is parsed. Default:
    6 bytes per character of the largest note (`max_content_chars`) plus 1 MiB for the rest of the
    request. An ASCII-only JSON encoder (Python's json, requests) writes a non-ASCII character as a
    6-byte `\\uXXXX` escape, more than UTF-8's 4 bytes, so the largest note fits however a client
    encodes it; only characters beyond the BMP (12 bytes as escaped surrogate pairs) must come as
    UTF-8 to fit all 5,000,000. Routes with caps of their own (store writes, batch-ops, file
    upload) keep them."""
    max_file_bytes: int = 25 * MiB
    max_url_bytes: int = 5 * MiB
    url_timeout_s: float = 20.0
    url_max_redirects: int = 5
    allow_private_urls: bool = False
    """Allow memory_ingest_url to fetch loopback/private/link-local addresses (tests, closed networks)."""

    chunk_target_chars: int = 700
    chunk_overlap_chars: int = 120

    # Store protocol limits (Jeffs PROTOCOL.md "Body size limits")
    max_put_bytes: int = 2 * MiB
    max_batch_bytes: int = 8 * MiB
    max_batch_ops: int = 1024
    max_list_items: int = 10_000
    read_redirect_bytes: int = Field(default=4 * MiB, ge=0)
    """A store-protocol read (`GET …/documents/read`) of a document larger than this answers 307 with
    a presigned URL of its blob, where the blob store signs downloads (S3): a Lambda response holds
    at most 6 MB, and binary bodies travel base64-encoded (4 MiB is 5.6 MB so). Elsewhere, the bytes."""
    events_ping_s: float = 25.0

    sibling_context_window_s: float = 600.0
    """Index a new document with an excerpt of the sibling written just before it in the same
    folder, when that was at most this long ago (0 disables; see services/documents/siblings.py)."""

    # Retrieval
    candidate_pool: int = 100
    rrf_k: int = 60
    bm25_weight: float = 1.0
    vector_weight: float = 0.4
    """The dense leg counts 0.4 of the BM25 leg in RRF (LoCoMo dev peaked there; docs/PERFORMANCE.md)."""
    relevance_midpoint: Annotated[float | None, BeforeValidator(_blank_is_none)] = None
    relevance_slope: Annotated[float | None, BeforeValidator(_blank_is_none)] = None
    """The embedding model's calibration, cosine to relevance (services/search/relevance.py), both or
    neither: `cairn calibrate` fits them. Unset, the embedded model's is known; another model's
    scores are then on the embedded model's scale, and the start-up log says so."""

    # Generation (memory_ask)
    generator: Literal["extractive", "openai", "bedrock"] = "extractive"
    """`extractive` answers offline from the retrieved sentences; `openai` calls any
    OpenAI-compatible chat-completions server (Ollama, vLLM, llama.cpp, …)."""
    generator_base_url: str = "http://127.0.0.1:11434/v1"
    generator_model: str = "llama3.1"
    generator_api_key: Credential = None
    generator_timeout_s: float = 60.0
    generator_max_retries: int = Field(default=3, ge=0)
    generator_backoff_s: float = Field(default=0.5, ge=0.0)
    extractor_model: str | None = None
    """The model fact extraction and reflection use with `generator=openai` (default: generator_model)."""
    extractor_timeout_s: float = Field(default=180.0, gt=0)
    """Extraction waits for a whole JSON completion, not a stream: allow more than generator_timeout_s."""
    extractor_max_retries: int = Field(default=3, ge=0)
    extractor_batch_utterances: int = Field(default=60, ge=1)
    extractor_batch_chars: int = Field(default=24_000, ge=1_000)
    assertion_model_pages_per_check: int = Field(default=20, ge=0)
    """Pages whose claims gbrain's brain_check may ask the model for per call (0: rules only)."""
    extractive_sentences: int = Field(default=5, ge=1, le=20)
    """At most this many sentences per extractive answer; only sentences that answer are quoted
    (adapters/local/extractive_select.py, docs/PERFORMANCE.md)."""

    # Reranking (docs/RERANKING.md)
    reranker: Literal["none", "http", "bedrock"] = "none"
    """`http`: a server of the common `/rerank` API at reranker_base_url; `bedrock`: Bedrock's Rerank API."""
    reranker_base_url: str = "http://127.0.0.1:8000/v1"
    reranker_model: str = "BAAI/bge-reranker-v2-m3"
    reranker_api_key: Credential = None
    reranker_timeout_s: float = Field(default=10.0, gt=0)
    reranker_max_retries: int = Field(default=2, ge=0)
    bedrock_rerank_model: str = "amazon.rerank-v1:0"
    """A model id (amazon.rerank-v1:0, cohere.rerank-v3-5:0) or a model ARN."""

    # Jobs
    job_lease_s: float = 60.0
    job_max_attempts: int = 3
    job_max_handed_over_s: float = Field(default=6 * 3600.0, gt=0)
    """A job whose attempts were handed back by stopping processes (`cairn mcp` sessions ending,
    `cairn serve` restarted) after running this long in all fails rather than run again: one longer
    than every session that takes it up, or a handler that hangs, is given up on."""
    job_workers: int = Field(default=2, ge=1)
    """Worker threads per embedded job queue; one principal's jobs hold at most `job_workers - 1`
    of them (at least one), counted over every process on the data directory."""
    ingest_queue_bytes: int = Field(default=8 * MiB, ge=0)
    """File ingests larger than this answer `queued` with a job id and finish in the background."""
    ingest_queue_chunks: int | None = Field(default=None, ge=1)
    """A markdown, text or JSON file whose text makes more chunks than this is queued too, however
    small (AWS: an API call must embed within 29 s, and one-line sections make a chunk each)."""
    ingest_batch_chunks: int = Field(default=32, ge=1, le=1000)
    """Chunks per batch in the ingest state machine's Map (one task embeds and indexes one batch)."""

    # Extraction, reflection, consolidation (docs/MEMORY.md)
    fact_dedupe_overlap: float = Field(default=0.85, ge=0.0, le=1.0)
    """Two extracted facts are one when one's words contain the other's or overlap this much."""
    consolidate_every_s: float | None = Field(default=None, gt=0)
    """`cairn serve` queues a consolidation of every brain this often (off by default). On AWS it
    overrides the idempotency window derived from consolidation_schedule."""
    consolidation_schedule: str | None = None
    """The EventBridge schedule expression that invokes the AWS scheduled consolidation (`rate(6
    hours)`, `cron(...)`), from which its idempotency window is derived (services/memory/schedule.py)."""
    merge_min_cosine: float = Field(default=0.9, ge=0.0, le=1.0)
    merge_min_overlap: float = Field(default=0.7, ge=0.0, le=1.0)
    promote_confirmations: int = Field(default=2, ge=1)
    prune_after_days: float = Field(default=30.0, ge=0.0)
    prune_max_importance: float = Field(default=0.5, ge=0.0, le=1.0)
    summary_min_notes: int = Field(default=3, ge=1)

    # Session recall (services/sessions/session_recall.py, docs/SESSIONS.md)
    session_recall_window: int = Field(default=6, ge=0, le=50)
    """How many of a session's newest messages weight its recall (0: plain search)."""
    session_context_weight: float = Field(default=0.5, ge=0.0)
    session_context_decay: float = Field(default=0.7, ge=0.0, le=1.0)
    session_gate_floor: float = 0.3
    session_gate_full: float = 0.6
    """A message counts in recall from this query-message cosine similarity (floor) and fully at
    `full`; calibrated for MiniLM-L6 (docs/SESSIONS.md)."""

    @model_validator(mode="after")
    def _calibration_whole(self) -> Settings:
        if (self.relevance_midpoint is None) != (self.relevance_slope is None):
            raise ValueError("set CAIRN_RELEVANCE_MIDPOINT and CAIRN_RELEVANCE_SLOPE together")
        if self.relevance_slope is not None and self.relevance_slope <= 0:
            raise ValueError("CAIRN_RELEVANCE_SLOPE must be above 0")
        return self

    @model_validator(mode="after")
    def _jwt_audience_named(self) -> Settings:
        """A token is taken only for an audience this server names (auth/jwt_verify.py): with an
        issuer and none, every start failed with a traceback."""
        named = bool(self.jwt_audience) and all(a.strip() for a in self.jwt_audience)
        if self.jwt_issuer and self.jwt_issuer.strip() and not named:
            raise ValueError(
                "CAIRN_JWT_ISSUER is set and CAIRN_JWT_AUDIENCE names no audience (or a blank one): "
                'give this server\'s identifiers as a JSON list, e.g. ["https://cairn.example.com/mcp"]'
            )
        return self

    @model_validator(mode="after")
    def _one_credential_per_server(self) -> Settings:
        """A user and password in a model server's URL go as Basic credentials, in the header the
        API key's Bearer token goes in: with both set, the key was silently never sent."""
        for name, url, key in (
            ("GENERATOR", self.generator_base_url, self.generator_api_key),
            ("RERANKER", self.reranker_base_url, self.reranker_api_key),
        ):
            if key is not None and _has_userinfo(url):
                raise ValueError(
                    f"CAIRN_{name}_BASE_URL holds a user and password and CAIRN_{name}_API_KEY is set: "
                    "a request carries one of them only; keep the one the server wants"
                )
        return self

    @property
    def json_body_limit(self) -> int:
        if self.max_json_body_bytes is not None:
            return self.max_json_body_bytes
        return 6 * self.max_content_chars + MiB

    @property
    def resolved_ingest_root(self) -> Path:
        return self.ingest_root if self.ingest_root is not None else self.data_dir / "ingest"
