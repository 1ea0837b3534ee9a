"""A CPU-bound loop of NVTX "frame" ranges that times its own frames, for the analysis tests.

Each frame computes square roots for about --work-ms and sleeps --sleep-ms; the first frame does four times
the work (a "first inference"). At the end it prints one JSON line with its own count and per-frame times.
"""
import argparse
import json
import math
import time

import nvtx  # 0.2.8: its ranges reach nsys 2022.4 (0.2.16+ send none)

parser = argparse.ArgumentParser()
parser.add_argument("--frames", type=int, default=60)
parser.add_argument("--work", type=int, default=40000, help="square roots per frame")
parser.add_argument("--sleep-ms", type=float, default=1.0)
args = parser.parse_args()

durations = []
checksum = 0.0
for index in range(args.frames):
    started = time.perf_counter_ns()
    with nvtx.annotate("frame"):
        for k in range(args.work * (4 if index == 0 else 1)):
            checksum += math.sqrt(k)
        time.sleep(args.sleep_ms / 1000)
    durations.append(time.perf_counter_ns() - started)
print(json.dumps({"frames": args.frames, "durations_ns": durations, "checksum": checksum}))
