"""infra/local/env.json (`sam local --env-vars`, scripts/aws_local.py) asks only for what the Lambda
layer can run: every CAIRN_* variable is a setting with a valid value, and each adapter the values
select imports, at module level, only the standard library, cairn and what
layers/core/requirements.txt installs (with their own dependencies)."""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest
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
    base = PACKAGE / module.replace(".", "/")
    source = base.with_suffix(".py") if base.with_suffix(".py").exists() else base / "__init__.py"
    if not source.exists():
        return set()
    outside: set[str] = set()
    for node in ast.parse(source.read_text()).body:  # module level: lazy imports are a choice made later
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            if name.split(".")[0] == "cairn":
                outside |= module_imports(name, seen)
            elif name != "__future__":
                outside.add(name.split(".")[0])
    return outside


def missing_from_layer(module: str) -> set[str]:
    shipped = layer_distributions()
    providers = metadata.packages_distributions()
    return {
        name
        for name in module_imports(module)
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
