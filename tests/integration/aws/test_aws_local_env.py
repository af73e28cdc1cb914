"""infra/local/env.json (`sam local --env-vars`, scripts/aws_local.py) asks only for what the Lambda
layer can run: every CAIRN_* variable is a setting with a valid value, and each adapter the values
select imports, at module level, only the standard library, cairn and what
layers/core/requirements.txt installs (with their own dependencies)."""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from cfnlint.decode import decode_str
from packaging.requirements import Requirement

from cairn.config import Settings

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "layers/core"
FUNCTIONS = json.loads((ROOT / "infra/local/env.json").read_text())

EMBEDDERS = {"onnx": "cairn.adapters.local.onnx_embedder", "bedrock": "cairn.adapters.aws.bedrock_embedder"}
GENERATORS = {
    "extractive": "cairn.adapters.local.extractive",
    "openai": "cairn.adapters.local.openai_compat",
    "bedrock": "cairn.adapters.aws.bedrock_generator",
}


def _name(requirement: str) -> str:
    return re.sub(r"[-_.]+", "-", requirement).lower()


def layer_distributions() -> set[str]:
    """The layer's requirements and everything they install in turn (markers evaluated here)."""
    lines = (PACKAGE / "requirements.txt").read_text().splitlines()
    pending = [Requirement(line) for line in (raw.split("#", 1)[0].strip() for raw in lines) if line]
    found: set[str] = set()
    while pending:
        requirement = pending.pop()
        name = _name(requirement.name)
        if name in found:
            continue
        found.add(name)
        for extra in requirement.extras or {""}:
            for text in metadata.requires(requirement.name) or ():
                needed = Requirement(text)
                if needed.marker is None or needed.marker.evaluate({"extra": extra}):
                    pending.append(needed)
    return found


def module_imports(module: str, seen: set[str] | None = None) -> set[str]:
    """Top-level names of the non-cairn modules `module` imports at module level, through cairn."""
    seen = set() if seen is None else seen
    if module in seen:
        return set()
    seen.add(module)
    inside, own = _imported_by(module)
    outside = set(own)  # the cached set stays as parsed
    for name in inside:
        outside |= module_imports(name, seen)
    return outside


@functools.cache
def _imported_by(module: str) -> tuple[tuple[str, ...], set[str]]:
    """The cairn modules `module`'s source imports at module level, and the other top-level names
    (each file parsed once a run: every test walks most of cairn from cairn.bootstrap.aws)."""
    base = PACKAGE / module.replace(".", "/")
    source = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
    if not source.exists():
        return (), set()
    inside: list[str] = []
    outside: set[str] = set()
    for node in ast.parse(source.read_text()).body:  # module level: lazy imports are a choice made later
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            if name.split(".")[0] == "cairn":
                inside.append(name)
            elif name != "__future__":
                outside.add(name.split(".")[0])
    return tuple(inside), outside


def imported_when_used(module: str) -> set[str]:
    """Top-level names of the non-cairn modules `module`'s own functions import when first used (the
    ONNX embedder loads onnxruntime on its first text): the layer must ship those too."""
    base = PACKAGE / module.replace(".", "/")
    source = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
    names: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names - {"cairn", "__future__"}


def missing_from_layer(module: str) -> set[str]:
    shipped = layer_distributions()
    providers = metadata.packages_distributions()
    return {
        name
        for name in module_imports(module) | imported_when_used(module)
        if name not in sys.stdlib_module_names
        and not any(_name(dist) in shipped for dist in providers.get(name, ()))
    }


def settings_of(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Settings:
    for key in [k for k in os.environ if k.startswith("CAIRN_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, str(value))
    return Settings()


def test_the_check_tells_the_embedded_onnx_embedder_from_bedrock() -> None:
    assert missing_from_layer(EMBEDDERS["onnx"]) >= {"onnxruntime", "tokenizers"}
    assert missing_from_layer(EMBEDDERS["bedrock"]) == set()


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_every_cairn_value_is_one_the_layer_runs(function: str, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {k: str(v) for k, v in FUNCTIONS[function].items()}
    cairn = {k for k in env if k.startswith("CAIRN_")}
    fields = {f"CAIRN_{name.upper()}" for name in Settings.model_fields}
    assert cairn <= fields, f"not settings (ignored silently): {sorted(cairn - fields)}"
    settings = settings_of(env, monkeypatch)  # every value validates
    assert settings.backend == "aws"
    assert settings.data_dir.is_relative_to("/tmp")  # Lambda's only writable directory
    assert settings.aws_local_fallbacks  # no OpenSearch or Step Functions emulator runs offline
    for module in (EMBEDDERS[settings.embedder], GENERATORS[settings.generator], "cairn.bootstrap.aws"):
        assert missing_from_layer(module) == set(), module


# -- the emulation's function: template.yaml's settings ---------------------------------------------


def emulation() -> tuple[Any, Any, dict[str, str]]:
    """scripts/aws_local.py's Template and the API function environment it runs with (its defaults)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import aws_local
        from aws_local_template import LocalStack, Template
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    stack = LocalStack("us-east-1", "123456789012", "http://127.0.0.1:8787/_cognito")
    template = Template(ROOT / "template.yaml", stack)
    return aws_local, template, aws_local.function_environment(template, FUNCTIONS["ApiFunction"])


def test_the_emulated_function_has_the_stacks_jwt_settings_and_limits() -> None:
    """Every variable template.yaml gives the API function reaches the emulated one with the value
    the template deploys by default; only the local stand-ins for AWS resources (env.json's) and
    the Cognito pool's URLs (the emulation's own stand-in) differ."""
    aws_local, _, env = emulation()
    raw = decode_str((ROOT / "template.yaml").read_text())[0]
    declared = {**raw["Globals"]["Function"]["Environment"]["Variables"]}
    declared |= raw["Resources"]["ApiFunction"]["Properties"].get("Environment", {}).get("Variables", {})
    parameters = raw["Parameters"]
    assert set(declared) <= set(env)
    for key, node in declared.items():
        if key in aws_local.LOCAL_STAND_INS:
            assert env[key] == str(FUNCTIONS["ApiFunction"][key]), key
        elif isinstance(node, dict) and set(node) == {"Ref"} and node["Ref"] in parameters:
            assert env[key] == str(parameters[node["Ref"]].get("Default", "")), key  # thresholds, limits
        elif not isinstance(node, dict):
            assert env[key] == str(node), key
    # The JWT rules of the default stack (a Cognito pool of its own), read here from the template.
    assert raw["Parameters"]["JwtIssuer"]["Default"] == ""  # so UseCognito holds
    assert env["CAIRN_JWT_ISSUER"] == "http://127.0.0.1:8787/_cognito/us-east-1_CairnLocal"
    clients = [k for k, r in raw["Resources"].items() if r["Type"] == "AWS::Cognito::UserPoolClient"]
    assert sorted(json.loads(env["CAIRN_JWT_AUDIENCE"])) == sorted(f"local{c.lower()}" for c in clients)
    assert env["CAIRN_JWT_SCOPE_PREFIX"] == "cairn/" and env["CAIRN_JWT_USER_GROUPS"] == "true"
    assert env["CAIRN_JWT_DEFAULT_TENANT"] == parameters["Stage"]["Default"]
    assert env["CAIRN_JWT_TENANT_CLAIM"] == parameters["TenantClaim"]["Default"]
    assert json.loads(env["CAIRN_IAM_TENANTS"]) == {"123456789012": parameters["Stage"]["Default"]}
    assert env["CAIRN_INGEST_QUEUE_BYTES"] == str(parameters["IngestQueueBytes"]["Default"])
    assert "CAIRN_ALLOW_OPEN" in env  # env.json's, for callers without credentials (--require-auth drops it)


def test_the_emulated_environment_is_settings_the_function_accepts(monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, env = emulation()
    settings = settings_of(env, monkeypatch)
    assert settings.backend == "aws" and settings.aws_local_fallbacks
    assert settings.jwt_issuer == env["CAIRN_JWT_ISSUER"]
    assert len(settings.jwt_audience) == 4  # the pool's app clients, the web UI's among them
    assert settings.ingest_queue_bytes == int(env["CAIRN_INGEST_QUEUE_BYTES"])
    assert settings.ingest_queue_chunks == int(env["CAIRN_INGEST_QUEUE_CHUNKS"]) == 160


def test_the_machine_client_has_the_template_scopes() -> None:
    """The Cognito stand-in's machine client may ask for exactly MachineClientScopes."""
    _, template, _ = emulation()
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from aws_local_cognito import app_clients
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    machine = app_clients(template, "s3cret")["localmachineclient"]
    default = decode_str((ROOT / "template.yaml").read_text())[0]["Parameters"]["MachineClientScopes"][
        "Default"
    ]
    assert machine.flows == ("client_credentials",) and machine.secret == "s3cret"
    assert machine.scopes == tuple(f"cairn/{s}" for s in str(default).split(","))
