"""Ambiguous: each frame waits 5 ms for a worker thread's answer and 5 ms for a child process's answer on a pipe (the
child sleeps 5 ms before writing). Neither is the cause: the verdict must say it is unsure."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # its files lie beside it (not beside a link's target)
from verdict_frames import frames, workers  # noqa: E402

asked, answered = workers(1)
child_reads, main_writes = os.pipe()
main_reads, child_writes = os.pipe()
child = os.fork()
if child == 0:
    os.close(main_writes)
    os.close(main_reads)
    while os.read(child_reads, 1):
        time.sleep(0.005)
        os.write(child_writes, b"x")
    os._exit(0)
os.close(child_reads)
os.close(child_writes)
for _ in frames(200):
    asked.put(5)
    answered.get()
    os.write(main_writes, b"x")
    os.read(main_reads, 1)
os.close(main_writes)
os.waitpid(child, 0)
