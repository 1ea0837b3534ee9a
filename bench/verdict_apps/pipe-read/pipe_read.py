"""Frames paced by a pipe whose writer waits: a child process writes a line every 10 ms (sleeping between), and
each frame reads one (blocking in read) after 1 ms of its own work."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its files lie beside it (not beside a link's target)
from verdict_frames import frames, work_ms  # noqa: E402

reading, writing = os.pipe()
child = os.fork()
if child == 0:
    os.close(reading)
    while True:
        time.sleep(0.010)
        try:
            os.write(writing, b"tick\n")
        except BrokenPipeError:
            os._exit(0)
os.close(writing)
for _ in frames(250):
    work_ms(1)
    os.read(reading, 5)
os.close(reading)
os.kill(child, 9)
os.waitpid(child, 0)
