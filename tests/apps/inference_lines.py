"""A benchmark that prints like the seeds' (the tftrt-bench parser's lines): --frames inferences of --work square
roots each, then "First Inference : X ms" and "Inference : Y ms" (the mean of the others). Standard library only."""
import argparse
import math
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--work", type=int, default=200000, help="square roots per inference")
    args = parser.parse_args()
    durations, checksum = [], 0.0
    for _ in range(args.frames):
        started = time.perf_counter()
        for i in range(args.work):
            checksum += math.sqrt(i)
        durations.append(time.perf_counter() - started)
    print(f"First Inference : {durations[0] * 1000:.3f} ms")
    print(f"Inference : {sum(durations[1:]) / (len(durations) - 1) * 1000:.3f} ms")
    print(f"checksum {checksum:.0f}")


if __name__ == "__main__":
    main()
