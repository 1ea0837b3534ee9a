"""Whether a display's refresh likely paces the frames (vsync): nine steady frames in ten last a whole number (one
to four) of refresh periods of the rates the displays a Jetson drives run at (60 Hz monitors, 50 Hz TV modes),
within 3 %. Pure. Only then may a verdict speak of vsync: a buffer swap that blocks is no proof of it (es2gears
under Xvfb blocks in eglSwapBuffers with vsync off, waiting for the X server). It stays a likelihood: an app whose
own work takes 20 ms a frame clusters there too, so the verdict also wants the wait in a swap, the GPU not busy
all the time, and the app's environment not turning vsync off (verdict.py)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REFRESH_HZ = (60.0, 59.94, 50.0)
TOLERANCE = 0.03     # of a refresh period: 0.5 ms at 60 Hz
CLUSTERED = 0.9      # of the steady frames within the tolerance of a whole number of periods
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
                f"{self.hz:g} Hz display's refresh (vsync) likely paces them, one frame {per}")


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
