"""A benchmark that prints like the seeds' (the tftrt-bench parser's lines): --frames inferences of --work square
roots and a --sleep-ms wait each (an accelerator's time, which another process's load does not stretch), then
"First Inference : X ms" and "Inference : Y ms" (the mean of the others). Standard library only."""
import argparse
import math
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--work", type=int, default=200000, help="square roots per inference")
    parser.add_argument("--sleep-ms", type=float, default=0.0, help="a wait in each inference")
    args = parser.parse_args()
    durations, checksum = [], 0.0
    for _ in range(args.frames):
        started = time.perf_counter()
        for i in range(args.work):
            checksum += math.sqrt(i)
        time.sleep(args.sleep_ms / 1000.0)
        durations.append(time.perf_counter() - started)
    print(f"First Inference : {durations[0] * 1000:.3f} ms")
    print(f"Inference : {sum(durations[1:]) / (len(durations) - 1) * 1000:.3f} ms")
    print(f"checksum {checksum:.0f}")


if __name__ == "__main__":
    main()
