"""The Lambda layer's requirements pin exactly what pyproject.toml pins, minus the embedded-only deps."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EMBEDDED_ONLY = {"onnxruntime", "tokenizers", "rich", "uvicorn", "faiss-cpu"}


def pins(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            out[name.split("[")[0].lower()] = version
    return out


def test_layer_requirements_match_pyproject() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = pins(project["dependencies"] + project["optional-dependencies"]["aws"])
    layer = pins((ROOT / "layers/core/requirements.txt").read_text().splitlines())
    assert layer == {k: v for k, v in wanted.items() if k not in EMBEDDED_ONLY}
