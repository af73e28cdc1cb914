"""Settings turned into the narrow, typed options each part of Cairn is handed (cairn/options.py).

Only the composition root reads Settings (config.py). A surface gets `Options`: the request limits,
what the HTTP app needs, and the few choices the surfaces make (which brain zengram and
ThoughtMCP use, whether research is on). The Authenticator gets AuthOptions.
"""

from __future__ import annotations

from cairn.auth.authenticate import open_allowed
from cairn.auth.in_flight import DEFAULT_MOST
from cairn.auth.options import AuthOptions
from cairn.auth.rate_limit import DEFAULT_RATE_PER_S
from cairn.config import Settings
from cairn.options import HttpOptions, Limits, Options, SurfaceOptions

DAY_S = 86400.0


def options_from(settings: Settings) -> Options:
    on_aws = settings.backend == "aws"
    rate = settings.rate_limit_per_s
    running = settings.max_in_flight
    return Options(
        limits=Limits(
            max_put_bytes=settings.max_put_bytes,
            max_list_items=settings.max_list_items,
            max_file_bytes=settings.max_file_bytes,
            max_batch_ops=settings.max_batch_ops,
            max_batch_bytes=settings.max_batch_bytes,
            json_body_limit=settings.json_body_limit,
            read_redirect_bytes=settings.read_redirect_bytes,
        ),
        http=HttpOptions(
            host=settings.host,
            public_url=settings.public_url,
            on_aws=on_aws,
            ingest_root=settings.resolved_ingest_root,
            rate_per_s=None if on_aws else (DEFAULT_RATE_PER_S if rate is None else rate),
            rate_burst=settings.rate_limit_burst,
            limit_open=rate is not None,
            max_in_flight=None if on_aws else (DEFAULT_MOST if running is None else running),
            limit_open_in_flight=rate is not None or running is not None,
            failures_per_min=None if on_aws else settings.auth_failures_per_min,
            failure_burst=settings.auth_failure_burst,
            jwt_issuer=settings.jwt_issuer,
            jwt_scope_prefix=settings.jwt_scope_prefix,
            events_ping_s=settings.events_ping_s,
            ui_client_id=settings.ui_client_id,
        ),
        surfaces=SurfaceOptions(
            zengram_brain=settings.zengram_brain,
            zengram_research=settings.zengram_research_enabled,
            thoughtmcp_brain=settings.thoughtmcp_brain,
            generator=settings.generator,
            consolidation_schedule=settings.consolidation_schedule,
            on_aws=on_aws,
        ),
        consolidate_every_s=settings.consolidate_every_s,
        warm_surfaces=settings.warm_surfaces,
    )


def auth_options(settings: Settings) -> AuthOptions:
    configured = settings.token is not None or settings.jwt_issuer is not None
    return AuthOptions(
        open=open_allowed(
            allow_open=settings.allow_open,
            configured=configured,
            on_aws=settings.backend == "aws",
            host=settings.host,
        ),
        token=settings.token.get_secret_value() if settings.token else None,
        token_tenant=settings.token_tenant,
        jwt_issuer=settings.jwt_issuer,
        jwt_jwks_url=settings.jwt_jwks_url,
        jwt_audience=tuple(settings.jwt_audience),
        jwt_id_token_audience=(
            None if settings.jwt_id_token_audience is None else tuple(settings.jwt_id_token_audience)
        ),
        jwt_leeway_s=settings.jwt_leeway_s,
        jwt_tenant_claim=settings.jwt_tenant_claim,
        jwt_default_tenant=settings.jwt_default_tenant,
        jwt_scope_prefix=settings.jwt_scope_prefix,
        jwt_user_groups=settings.jwt_user_groups,
        iam_tenants=dict(settings.iam_tenants),
        iam_scopes={k: list(v) for k, v in settings.iam_scopes.items()},
    )


def schedule_window_s(settings: Settings) -> float:
    """The scheduled consolidation's idempotency window: CAIRN_CONSOLIDATE_EVERY_S, else derived
    from the rule's expression (CAIRN_CONSOLIDATION_SCHEDULE, set by the template), else a day."""
    from cairn.services.memory.schedule import window_for

    if settings.consolidate_every_s:
        return settings.consolidate_every_s
    if settings.consolidation_schedule and settings.consolidation_schedule != "off":
        return window_for(settings.consolidation_schedule)
    return DAY_S
