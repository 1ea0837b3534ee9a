"""A mixed frame with a clear lead: 7 ms of work, 2 ms asleep and 1 ms waiting on a worker thread."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its files lie beside it (not beside a link's target)
from verdict_frames import frames, work_ms, workers  # noqa: E402

asked, answered = workers(1)
for _ in frames(200):
    work_ms(7)
    time.sleep(0.002)
    asked.put(1)
    answered.get()
