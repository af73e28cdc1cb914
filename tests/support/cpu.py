"""What the CPU running the tests does with the embedded int8 model.

onnxruntime multiplies the model's uint8 activations by its int8 weights with VNNI's `vpdpbusd`
where the CPU has it, which sums exactly; without it (AVX2 only) with `vpmaddubsw`, whose 16-bit
pair sums can saturate. So the shipped model's vectors differ slightly between the two kinds of CPU
(docs/EMBEDDINGS.md: mean cosine to fp32 0.99295 with VNNI, 0.99163 without), and a test whose
case sits at a threshold's edge may land on either side of it.
"""

from __future__ import annotations

import functools
from pathlib import Path


@functools.cache
def exact_int8_sums() -> bool:
    """Whether this CPU has VNNI (AVX-512 or AVX), read from /proc/cpuinfo (True where unreadable)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8").split()
    except OSError:
        return True
    return "avx512_vnni" in flags or "avx_vnni" in flags
