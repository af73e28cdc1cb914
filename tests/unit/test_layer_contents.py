"""What the Lambda layer leaves out (layers/core/Makefile) is never imported on AWS: opensearch-py's
gRPC transport (grpc, protobuf, opensearch.protobufs) and the bundled ONNX model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("grpc", "google") or name.startswith("opensearch."):
            raise ImportError(f"{name} is not in the Lambda layer")
        return None

sys.meta_path.insert(0, Refuse())
import cairn.adapters.aws.opensearch_chunks as chunks
client = chunks.opensearch_client("https://search.example.com", "us-east-1", "none")
import cairn.bootstrap
import cairn.bootstrap.aws
onnx = "cairn.adapters.local.onnx_embedder"
print(type(client).__name__, "onnxruntime" in sys.modules, onnx in sys.modules)
"""


def test_the_opensearch_client_and_aws_bootstrap_need_nothing_the_layer_drops() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["OpenSearch", "False", "False"]
