"""A graph laid out as SVG: the root in the middle, each hop on a ring around it. Plain geometry,
no script: the page stays usable without JavaScript, and each node is a keyboard-reachable link."""

from __future__ import annotations

import math
from dataclasses import dataclass

from cairn.services.explorer.neighbourhood import Graph, Node

SIZE = 720
MARGIN = 70


@dataclass(frozen=True)
class Placed:
    node: Node
    x: float
    y: float


def layout(graph: Graph) -> dict[str, Placed]:
    rings: dict[int, list[Node]] = {}
    for node in graph.nodes:
        rings.setdefault(node.hops, []).append(node)
    centre = SIZE / 2
    ring = (centre - MARGIN) / max(max(rings, default=1), 1)
    placed: dict[str, Placed] = {}
    for hops, nodes in rings.items():
        radius = ring * hops
        for i, node in enumerate(nodes):
            angle = 2 * math.pi * i / len(nodes) + hops * 0.4
            placed[node.id] = Placed(
                node, centre + radius * math.cos(angle), centre + radius * math.sin(angle)
            )
    return placed


def short(label: str, width: int = 28) -> str:
    return label if len(label) <= width else label[: width - 1] + "…"
