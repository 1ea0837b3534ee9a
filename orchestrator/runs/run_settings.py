"""A run's settings: how it goes, beside what it runs (the app spec) and where (the host). One value, made once
from the command line, a study or a fleet, and passed down whole to every run it makes."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from remote_agent.messages import CaptureSettings, ClockLock

from ..errors import UsageError
from ..inventory.catalog import AppSpec


@dataclass(frozen=True)
class RunSettings:
    grace_s: float = 30.0  # past delay + duration, before the watchdog stops the app
    retries: int = 1  # captures made again when nsys leaves no report (stalled, failed to start, ended)
    heartbeat_timeout_s: float = 30.0  # the board ends the capture this long after the host went silent
    wait_lock_s: float = 0.0  # how long to wait for a board busy with another run
    keep_remote: bool = False  # keep the board's copy of the run after the verified pull
    lock_clocks: bool = False  # jetson_clocks for the capture, the board's own clocks restored after it
    nvpmodel: int | None = None  # with lock_clocks: this power mode for the capture, the board's own after it

    def __post_init__(self) -> None:
        if self.nvpmodel is not None and not self.lock_clocks:
            raise UsageError("--nvpmodel goes with --lock-clocks", "e.g. --lock-clocks --nvpmodel 0")

    def section(self) -> dict[str, Any]:
        """What run.json keeps of them (its ``request``)."""
        return asdict(self)


def capture_settings(settings: RunSettings, app: AppSpec) -> CaptureSettings:
    """What the board needs of a run's settings and its app spec to run the capture."""
    return CaptureSettings(delay_s=app.delay_s, duration_s=app.duration_s, grace_s=settings.grace_s,
                           heartbeat_timeout_s=settings.heartbeat_timeout_s, wait_lock_s=settings.wait_lock_s,
                           retries=settings.retries,
                           lock_clocks=ClockLock(nvpmodel=settings.nvpmodel) if settings.lock_clocks else None)
