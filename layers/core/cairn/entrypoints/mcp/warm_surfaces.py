"""`cairn serve`'s MCP surfaces built in the background once it answers, so that the first call of
each seldom pays for its build (~0.6 s for the first, which imports the MCP SDK; docs/PERFORMANCE.md,
"Surfaces built on first use").

Started only once the server serves (`/healthz` is never kept waiting for it), one surface at a
time in the registry's order, the canonical one first, each through the surface's own lock
(mcp/mount.py): a call that comes during a build waits for it and uses what it built, and a surface
a call has built already is skipped. A build that fails is logged, its text's credentials taken
out, and leaves nothing: the surface's next call builds it again. The stop ends it before its next
build; a build under way cannot be cut short, and the stop waits for it within its budget.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from cairn.domain.scrub import scrub
from cairn.entrypoints.mcp.mount import BuildFailed, SurfaceEndpoints
from cairn.entrypoints.stopping import STOPPING

_log = logging.getLogger(__name__)


class SurfaceWarmUp:
    """Builds each surface not yet built, in order, in one daemon thread started by `start`."""

    def __init__(self, surfaces: Sequence[SurfaceEndpoints]) -> None:
        self._surfaces = tuple(surfaces)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()

    def start(self) -> None:
        """Begin, once (later calls do nothing), unless the stop came first."""
        with self._starting:
            if self._thread is not None or self._stop.is_set():
                return
            self._thread = threading.Thread(target=self._run, name="warm-surfaces", daemon=True)
            self._thread.start()

    def stop(self, within_s: float) -> bool:
        """Build no more surfaces, and wait up to `within_s` for the build under way; whether the
        warm-up has ended (a `Stoppable`'s stop: entrypoints/cli/clean_stop.py)."""
        self._stop.set()
        with self._starting:
            thread = self._thread
        if thread is None:
            return True
        thread.join(within_s)
        return not thread.is_alive()

    def _stopping(self) -> bool:
        return self._stop.is_set() or STOPPING.is_set()  # STOPPING: set at the signal, before `stop`

    def _run(self) -> None:
        for endpoints in self._surfaces:
            if self._stopping():
                return
            if endpoints.built:
                continue
            try:
                endpoints.ensure()
            except BuildFailed:  # a call's build it waited for: logged by that call
                continue
            except Exception as exc:  # serving goes on: the surface's next call builds it again
                _log.warning(
                    "building the %s MCP surface in the background failed (%s: %s); its next call "
                    "builds it again",
                    endpoints.surface,
                    type(exc).__name__,
                    scrub(str(exc)),
                )
