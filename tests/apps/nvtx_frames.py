"""A CPU-bound loop of NVTX "frame" ranges that times its own frames, for the analysis tests.

Each frame computes square roots (--work of them) and sleeps --sleep-ms; the first frame does four times
the work (a "first inference"). With --stage NAME the work runs inside a nested range of that name (the
report tests give it a name full of markup and quotes). At the end it prints one JSON line with its own count
and per-frame times.
"""
import argparse
import contextlib
import json
import math
import time

import nvtx  # 0.2.8: its ranges reach nsys 2022.4 (0.2.16+ send none)


def frame(work, sleep_s, stage):
    total = 0.0
    with nvtx.annotate(stage) if stage else contextlib.nullcontext():
        for k in range(work):
            total += math.sqrt(k)
    time.sleep(sleep_s)
    return total



def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--work", type=int, default=60000, help="square roots per frame")
    parser.add_argument("--sleep-ms", type=float, default=1.0)
    parser.add_argument("--stage", help="name of a range nested in each frame, around its work")
    args = parser.parse_args()
    with nvtx.annotate("setup"):  # NVTX loads nsys's injection on its first call: not part of frame 0
        pass
    durations, checksum = [], 0.0
    for index in range(args.frames):
        started = time.perf_counter_ns()
        with nvtx.annotate("frame"):
            checksum += frame(args.work * (4 if index == 0 else 1), args.sleep_ms / 1000, args.stage)
        durations.append(time.perf_counter_ns() - started)
    print(json.dumps({"frames": args.frames, "durations_ns": durations, "checksum": checksum}))


main()
