"""Kept so older imports keep working: the surface registry is registry.py."""

from cairn.entrypoints.mcp.registry import SURFACES, build_server, http_path, require_surface

__all__ = ["SURFACES", "build_server", "http_path", "require_surface"]
