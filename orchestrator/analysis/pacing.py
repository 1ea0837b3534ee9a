"""Whether a display's refresh paces the frames (vsync): the steady frames cluster at a whole number of refresh
periods of a common display rate. Pure. Only then may a verdict speak of vsync: a buffer swap that blocks is no
proof of it (es2gears under Xvfb blocks in eglSwapBuffers with vsync off, waiting for the X server)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REFRESH_HZ = (60.0, 59.94, 50.0, 30.0, 72.0, 75.0, 90.0, 120.0, 144.0, 165.0, 240.0)
TOLERANCE = 0.04     # of a refresh period: 0.67 ms at 60 Hz
CLUSTERED = 0.75     # of the steady frames within the tolerance of a whole number of periods
MOST_PERIODS = 4     # a frame paced by the refresh spans one to four of its periods
MIN_FRAMES = 8


@dataclass(frozen=True)
class Pacing:
    hz: float
    periods: int        # refresh periods in the median steady frame
    share: float        # of the steady frames within TOLERANCE of a whole number of periods

    def words(self) -> str:
        per = "each refresh" if self.periods == 1 else f"every {self.periods} refreshes"
        return (f"{self.share:.0%} of the steady frames last a whole number of {1e3 / self.hz:.2f} ms periods: a "
                f"{self.hz:g} Hz display's refresh (vsync) paces them, one frame {per}")


def refresh_pacing(durations_ns) -> Pacing | None:
    """The display rate whose periods the frames cluster at, or None when no rate explains them."""
    durations = np.asarray(durations_ns, dtype=np.float64)
    if len(durations) < MIN_FRAMES:
        return None
    best: Pacing | None = None
    for hz in REFRESH_HZ:
        period = 1e9 / hz
        periods = np.rint(durations / period)
        near = (periods >= 1) & (periods <= MOST_PERIODS) & (np.abs(durations - periods * period) <= TOLERANCE * period)
        share = float(near.mean())
        if share >= CLUSTERED and (best is None or share > best.share):
            best = Pacing(hz, int(np.rint(np.median(durations) / period)), share)
    return best
