"""The live visibility world (tests/support/live_world.py) for the erasure tests."""

from tests.support.live_world import Live, live

__all__ = ["Live", "live"]
