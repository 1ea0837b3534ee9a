"""Ambiguous: each frame 5 ms of work and 5 ms asleep. Neither is the cause: the verdict must say it is unsure."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its files lie beside it (not beside a link's target)
from verdict_frames import frames, work_ms  # noqa: E402

for _ in frames(250):
    work_ms(5)
    time.sleep(0.005)
