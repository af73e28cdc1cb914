"""The composition root (docs/ARCHITECTURE.md): the only package that reads Settings and chooses
adapters. `shared` wires services and hands out options; `local` and `aws` build each backend's
adapters; `models` the model adapters either backend uses; `functions` the Lambda handlers."""

from cairn.bootstrap.shared import build_container
from cairn.bootstrap.sweep import index_sweeper
from cairn.container import Adapters, Container
from cairn.options import Options

__all__ = ["Adapters", "Container", "Options", "build_container", "index_sweeper"]
