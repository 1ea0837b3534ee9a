"""One model of noise for the CI gate, studies and `compare`: a difference is judged against the spread of
what shares the machine's weather (a CI job against the jobs before it; in a study or a comparison, one
variant against another run by run, round by round), and it gets one of three verdicts:

- clear: beyond the noise (p < ALPHA, two-sided) and larger than the practical threshold;
- the same: well within the noise (p >= SAME_P), or under the threshold even at the far end of its own 95 %
  interval;
- not sure yet: anything between: more runs (or more rounds) would tell.

Pure, and light: no numpy or scipy, so the commands that only name these figures start fast."""
from __future__ import annotations

ALPHA = 0.01
SAME_P = 0.2
CLEAR, SAME, UNSURE = "clear", "same", "unsure"


def classify(p_value: float, change: float, reach: float, threshold: float) -> str:
    """``change``: the relative difference; ``reach``: how far it could be at the far end of its own 95 %
    interval (relative, positive); ``threshold``: the smallest change that matters (relative)."""
    if p_value < ALPHA and abs(change) > threshold:
        return CLEAR
    if p_value >= SAME_P or reach <= threshold:
        return SAME
    return UNSURE
