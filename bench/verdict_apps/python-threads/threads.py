"""Frames that wait on Python worker threads: each frame hands two workers 4 ms of work each through a queue and
waits for both answers (the interpreter's locks: semaphores and condition variables), then runs 1 ms itself."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its files lie beside it (not beside a link's target)
from verdict_frames import frames, work_ms, workers  # noqa: E402

asked, answered = workers(2)
for _ in frames(200):
    asked.put(4)
    asked.put(4)
    answered.get()
    answered.get()
    work_ms(1)
