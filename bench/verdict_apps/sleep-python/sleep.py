"""Frames that sleep: 1 ms of work, then time.sleep for 8 ms."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its files lie beside it (not beside a link's target)
from verdict_frames import frames, work_ms  # noqa: E402

for _ in frames(250):
    work_ms(1)
    time.sleep(0.008)
