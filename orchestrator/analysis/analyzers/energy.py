"""Energy per frame: the board's power integrated over each frame's span. Pure.

Power comes as samples (time, mW) a few hundred ms apart; each value is held until the next sample, so
the energy between two times is the difference of the held power's running integral, exact for that
step function. Frames outside the sampled span get None, never a guess."""
from __future__ import annotations

import numpy as np


def energy_per_frame_mj(sample_s: list[float], power_mw: list[float], frame_starts_s: np.ndarray,
                        frame_ends_s: np.ndarray) -> list[float | None]:
    """mJ per frame (mW x s); times on one clock (seconds)."""
    if len(sample_s) < 2:
        return [None] * len(frame_starts_s)
    t = np.asarray(sample_s, dtype=np.float64)
    p = np.asarray(power_mw, dtype=np.float64)
    running = np.concatenate(([0.0], np.cumsum(p[:-1] * np.diff(t))))  # mJ at each sample time

    def integral(at: np.ndarray) -> np.ndarray:
        index = np.clip(np.searchsorted(t, at, side="right") - 1, 0, len(t) - 1)
        return running[index] + p[index] * (at - t[index])
    starts, ends = np.asarray(frame_starts_s, dtype=np.float64), np.asarray(frame_ends_s, dtype=np.float64)
    energy = integral(ends) - integral(starts)
    inside = (starts >= t[0]) & (ends <= t[-1])
    return [round(float(e), 6) if ok else None for e, ok in zip(energy, inside)]
