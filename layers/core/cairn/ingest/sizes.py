"""Human-readable byte sizes for limit messages."""

from __future__ import annotations

_UNITS = ((1024 * 1024 * 1024, "GiB"), (1024 * 1024, "MiB"), (1024, "KiB"))


def format_size(size: int) -> str:
    """`25 MiB`, `1.5 KiB`, `100 bytes`."""
    for factor, unit in _UNITS:
        if size >= factor:
            value = size / factor
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"
