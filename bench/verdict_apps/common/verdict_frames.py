"""What the benchmark's Python apps share: an amount of CPU time, and frames as NVTX ranges named "frame"."""
import queue
import sys
import threading
import time

import nvtx


def work_ms(ms):
    """ms of this thread's own CPU time (its clock, not the wall's), running Python: the same work on a busy
    machine, where the wall time it takes grows by the time the thread waits for a CPU."""
    end = time.thread_time() + ms / 1e3
    x = 1
    while time.thread_time() < end:
        for _ in range(200):
            x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return x


def frames(count=None):
    """Frame numbers, each inside an NVTX range "frame"; the count from argv[1] when given."""
    total = int(sys.argv[1]) if len(sys.argv) > 1 else count
    for frame in range(total):
        with nvtx.annotate("frame"):
            yield frame
    print(f"{total} frames", flush=True)


def workers(count=1):
    """Python threads that each take an amount of CPU time (ms) from one queue and answer on another when done:
    (asked, answered)."""
    asked: queue.Queue = queue.Queue()
    answered: queue.Queue = queue.Queue()

    def work():
        while True:
            answered.put(work_ms(asked.get()))
    for _ in range(count):
        threading.Thread(target=work, daemon=True).start()
    return asked, answered
