"""Frames of pure Python arithmetic: 10 ms of the interpreter's own work each."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its files lie beside it (not beside a link's target)
from verdict_frames import frames, work_ms  # noqa: E402

for _ in frames(200):
    work_ms(10)
