"""`cairn smoke URL` (the post-deploy smoke test, docs/SMOKE.md) against scripts/aws_local.py run as
the deployed stack runs: callers need credentials, JWTs come from the emulation's Cognito stand-in,
SigV4 callers are verified as API Gateway's IAM authorizer does. It passes; with a piece broken it
fails and names the step."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest
from cfnlint.decode import decode_str

from cairn.entrypoints.cli.parser import SMOKE_INGEST_BYTES as INGEST_BYTES
from tests.integration.aws.aws_local_run import (
    ACCESS_KEY,
    MACHINE_ID,
    MACHINE_SECRET,
    ROOT,
    SECRET_KEY,
    AwsLocal,
    aws_local,
    run_smoke,
    smoke_steps,
)
from tests.integration.aws.test_aws_local_clients import signed_request

SIGNER = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1"}
MACHINE = {"CAIRN_SMOKE_CLIENT_ID": MACHINE_ID, "CAIRN_SMOKE_CLIENT_SECRET": MACHINE_SECRET}
SURFACE_PATHS = ("/mcp", "/mcp/admin", "/mcp/zengram", "/mcp/gbrain", "/mcp/mnemosyne", "/mcp/thoughtmcp")
EVERY_STEP = [
    "healthz",
    *(f"401 + metadata {path}" for path in SURFACE_PATHS),
    "machine token",
    "machine token on /mcp (tools/list)",
    "machine token on /v1 (GET /v1/brains)",
    "SigV4 memory_create_brain",
    "queued ingest",
    "search /v1",
    "search /mcp",
    "search /mcp/gbrain",
    "search /mcp/mnemosyne",
    "store + search /mcp/zengram",
    "store + search /mcp/thoughtmcp",
    "clean up",
]


def queued_bytes() -> str:
    """A file size the stack queues: above template.yaml's IngestQueueBytes, whatever it is now."""
    template = decode_str((ROOT / "template.yaml").read_text())[0]
    return str(int(template["Parameters"]["IngestQueueBytes"]["Default"]) + 64 * 1024)


def test_the_default_file_size_is_queued_by_a_default_stack() -> None:
    assert int(queued_bytes()) - 64 * 1024 < INGEST_BYTES  # template.yaml's IngestQueueBytes


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AwsLocal]:
    with aws_local(tmp_path_factory.mktemp("smoke"), "--require-auth") as running:
        yield running


def brains_of_the_signer(stack: AwsLocal) -> list[str]:
    answer = httpx.Client(timeout=30).send(signed_request("GET", f"{stack.base}/v1/brains"))
    assert answer.status_code == 200
    return [b["slug"] for b in answer.json()["items"]]


def test_the_smoke_test_passes_against_the_emulated_stack(stack: AwsLocal) -> None:
    done = run_smoke(stack.base, "--sigv4", "--ingest-bytes", queued_bytes(), env=SIGNER | MACHINE)
    steps = smoke_steps(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr + stack.log()
    assert list(steps) == EVERY_STEP
    assert {name: status for name, (status, _) in steps.items() if status != "ok"} == {}
    assert done.stdout.splitlines()[-1] == f"smoke: {len(EVERY_STEP)} passed, 0 skipped, 0 failed"
    # What it checked, as it says: its own http:// metadata, the stand-in's token, a queued job.
    assert (
        steps["401 + metadata /mcp"][1] == f"authorization server {stack.base}"  # Cairn, before the pool
    )
    assert "scopes cairn/documents:read cairn/documents:write" in steps["machine token"][1]
    assert "11 tools" in steps["machine token on /mcp (tools/list)"][1]
    assert " completed, " in steps["queued ingest"][1]
    # Line by line off a terminal, no secret or token printed, and nothing left behind.
    assert "\r" not in done.stdout and "\x1b" not in done.stdout
    assert MACHINE_SECRET not in done.stdout + done.stderr and "eyJ" not in done.stdout + done.stderr
    assert SECRET_KEY not in done.stdout + done.stderr
    assert not [slug for slug in brains_of_the_signer(stack) if slug.startswith("cairn-smoke-")]
    assert "thoughtmcp" not in brains_of_the_signer(stack)


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # closed again: nothing listens there


def test_a_dead_token_endpoint_fails_the_token_step_by_name(stack: AwsLocal) -> None:
    """Named without the password a token URL was given with (nor anything else of the run)."""
    port = dead_port()
    dead = f"http://smoke:pw-not-for-the-screen@127.0.0.1:{port}/oauth2/token"
    done = run_smoke(stack.base, "--token-url", dead, env=MACHINE, timeout=120)
    steps = smoke_steps(done.stdout)
    assert done.returncode == 1, done.stdout + done.stderr
    assert steps["machine token"][0] == "FAILED"
    shown = f"http://[CREDENTIALS_REDACTED]@127.0.0.1:{port}/oauth2/token"
    assert f"POST {shown}: ConnectError" in steps["machine token"][1]
    assert "pw-not-for-the-screen" not in done.stdout + done.stderr
    for path in SURFACE_PATHS:  # what needs no token still ran, and passed
        assert steps[f"401 + metadata {path}"][0] == "ok"
    for name in (
        "machine token on /mcp (tools/list)",
        "create the smoke brain (machine token)",
        "search /mcp",
    ):
        assert steps[name] == ("skipped", "skipped (machine token failed)")
    assert steps["SigV4 memory_create_brain"] == ("skipped", "skipped (no --sigv4)")
    assert steps["clean up"] == ("skipped", "skipped (nothing was created)")
    assert done.stdout.splitlines()[-1] == "smoke: 7 passed, 12 skipped, 1 failed: machine token"


def test_without_credentials_the_steps_that_need_them_say_so(stack: AwsLocal) -> None:
    done = run_smoke(stack.base, timeout=120)
    steps = smoke_steps(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        steps["machine token"][0] == "skipped" and "no client credentials given" in steps["machine token"][1]
    )
    skipped = [name for name, (status, _) in steps.items() if status == "skipped"]
    assert len(steps) == len(EVERY_STEP) + 1  # the brain is then the machine token's to make
    assert len(skipped) == len(steps) - 1 - len(SURFACE_PATHS)
    assert done.stdout.splitlines()[-1].startswith(f"smoke: {1 + len(SURFACE_PATHS)} passed, ")


def test_a_stack_whose_jobs_do_not_run_fails_the_queued_ingest(tmp_path: Path) -> None:
    """Break the job worker (a stack whose state machines never run): the ingest stays queued, the
    step says so, the searches that need it are skipped and the brain is still cleaned up."""
    with aws_local(tmp_path, "--require-auth", "--no-job-worker") as broken:
        args = ("--sigv4", "--ingest-bytes", queued_bytes(), "--job-timeout", "1")
        done = run_smoke(broken.base, *args, env=SIGNER | MACHINE, timeout=180)
        steps = smoke_steps(done.stdout)
        left = brains_of_the_signer(broken)
    assert done.returncode == 1, done.stdout + done.stderr
    assert steps["queued ingest"][0] == "FAILED" and "still queued after 1 s" in steps["queued ingest"][1]
    assert steps["search /mcp/gbrain"] == ("skipped", "skipped (queued ingest failed)")
    assert steps["store + search /mcp/thoughtmcp"][0] == "ok"
    assert steps["clean up"][0] == "ok"
    assert done.stdout.splitlines()[-1].endswith("1 failed: queued ingest")
    assert not [slug for slug in left if slug.startswith("cairn-smoke-")]


def test_the_emulated_function_checks_tokens_with_the_stacks_settings(stack: AwsLocal) -> None:
    """A token from the stand-in is a Cognito machine token: accepted on /v1 as tenant `dev` (the
    template's Stage default) with its `cairn/` scopes; one for a scope it was not given is refused
    at the token endpoint, and a token another issuer signed is refused by the function."""
    token_url = f"{stack.base}/_cognito/oauth2/token"
    with httpx.Client(timeout=30) as http:
        granted = http.post(
            token_url, data={"grant_type": "client_credentials"}, auth=(MACHINE_ID, MACHINE_SECRET)
        )
        refused = http.post(
            token_url,
            data={"grant_type": "client_credentials", "scope": "cairn/brains:admin"},
            auth=(MACHINE_ID, MACHINE_SECRET),
        )
        wrong = http.post(token_url, data={"grant_type": "client_credentials"}, auth=(MACHINE_ID, "nope"))
        token = granted.json()["access_token"]
        listed = http.get(f"{stack.base}/v1/brains", headers={"authorization": f"Bearer {token}"})
        made = http.post(
            f"{stack.base}/v1/brains", json={"name": "x"}, headers={"authorization": f"Bearer {token}"}
        )
        forged = token.rsplit(".", 1)[0] + ".c2lnbmF0dXJl"
        rejected = http.get(f"{stack.base}/v1/brains", headers={"authorization": f"Bearer {forged}"})
    assert granted.status_code == 200 and listed.status_code == 200
    assert made.status_code == 403  # MachineClientScopes: read and write, not brains:admin
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_scope"
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    assert rejected.status_code == 401 and 'error="invalid_token"' in rejected.headers["www-authenticate"]
    claims = jwt.decode(token, options={"verify_signature": False})
    assert claims["token_use"] == "access" and claims["client_id"] == MACHINE_ID and "aud" not in claims
