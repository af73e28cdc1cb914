"""`cairn oauth-clients`: the clients dynamic registration made (auth/oauth/registration.py),
listed, and revoked one by one: the operator's way to free places under CAIRN_OAUTH_MAX_CLIENTS
and to cut off a client. Run where the server's settings are (the pool's, for a revoke)."""

from __future__ import annotations

import argparse

from cairn.domain.errors import InvalidInput
from cairn.entrypoints.cli.common import open_store


def cmd_oauth_clients(args: argparse.Namespace) -> int:
    from cairn.auth.oauth.registered import RegisteredClients

    container = open_store(args, existing=True, settled=False)
    if args.clients_command == "list":
        clients = RegisteredClients(container.adapters.records, container.adapters.clock).list()
        shown = [c for c in clients if args.all or c.active]
        for c in shown:
            state = "active" if c.active else f"revoked {c.revoked_at:%Y-%m-%d}"
            if c.first_used_at is not None:
                state += f", first used {c.first_used_at:%Y-%m-%d}"
            elif c.use_tracked:
                state += ", never used"
            kind = "confidential" if c.confidential else "public"
            name = (c.client_name or "-")[:32]
            uris = " ".join(c.redirect_uris)
            print(f"{c.client_id}  {c.created_at:%Y-%m-%d}  {kind:<12} {name:<32} {state}  {uris}")
        live = sum(1 for c in clients if c.active)
        print(
            f"{live} active registered clients"
            + ("" if shown or not clients else " (--all lists revoked ones)")
        )
        return 0
    sign_in = container.sign_in
    if sign_in is None or sign_in.registration is None:
        raise InvalidInput(
            "client registration is not configured here: a revoke deletes the client's app client in "
            "the user pool, so run it with the server's settings (CAIRN_JWT_ISSUER, "
            "CAIRN_COGNITO_DOMAIN, CAIRN_COGNITO_USER_POOL_ID)"
        )
    revoked = sign_in.registration.revoke(args.client_id)
    print(f"{revoked.client_id} revoked: its app client is deleted and its tokens are refused")
    return 0
