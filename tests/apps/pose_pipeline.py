"""A TFLite pose pipeline like the seeds' pose apps: SSD person detector, NMS, then landmarks, per frame.

MediaPipe's pose_detection.tflite (an SSD with 2254 anchors) and pose_landmark_full.tflite run through
ai-edge-litert (XNNPACK on the CPU) on a synthetic frame. Each frame is an NVTX range "frame" holding
"detect", "nms" and "landmark" (Python nvtx 0.2.8). It prints its own timings the way the seeds' benchmark
does ("First Inference : X ms", then the mean of the others as "Inference : Y ms") and a JSON line.
"""
import argparse
import json
import os
import time

import numpy as np
import nvtx
from ai_edge_litert.interpreter import Interpreter

parser = argparse.ArgumentParser()
parser.add_argument("--models", required=True, help="folder with pose_detection.tflite and pose_landmark_full.tflite")
parser.add_argument("--frames", type=int, default=40)
parser.add_argument("--threads", type=int, default=2)
args = parser.parse_args()


def load(name):
    interpreter = Interpreter(model_path=os.path.join(args.models, name), num_threads=args.threads)
    interpreter.allocate_tensors()
    return interpreter


def nms(boxes, scores, limit=0.3, keep=10):
    """Greedy non-maximum suppression over (ymin, xmin, ymax, xmax) boxes, best score first."""
    order, kept = np.argsort(-scores), []
    while len(order) and len(kept) < keep:
        best, order = order[0], order[1:]
        kept.append(best)
        top = np.maximum(boxes[best, :2], boxes[order, :2])
        bottom = np.minimum(boxes[best, 2:], boxes[order, 2:])
        overlap = np.prod(np.clip(bottom - top, 0, None), axis=1)
        area = np.prod(boxes[:, 2:] - boxes[:, :2], axis=1)
        order = order[overlap / (area[best] + area[order] - overlap + 1e-9) < limit]
    return kept


detector, landmarks = load("pose_detection.tflite"), load("pose_landmark_full.tflite")
image = np.random.default_rng(7).random((256, 256, 3), dtype=np.float32)
durations = []
cpu_marks, wall_marks = [], []  # the process's CPU time (all its threads) and the clock at each frame's start
for _ in range(args.frames):
    started = time.perf_counter_ns()
    cpu_marks.append(time.process_time_ns())
    wall_marks.append(started)
    with nvtx.annotate("frame"):
        with nvtx.annotate("detect"):
            detector.set_tensor(detector.get_input_details()[0]["index"], image[None, 16:240, 16:240])
            detector.invoke()
            raw = detector.get_tensor(detector.get_output_details()[0]["index"])[0]
            logits = detector.get_tensor(detector.get_output_details()[1]["index"])[0, :, 0]
        with nvtx.annotate("nms"):
            scores = 1 / (1 + np.exp(-np.clip(logits, -80, 80)))
            centre, size = raw[:, :2], np.abs(raw[:, 2:4]) + 1e-3
            boxes = np.concatenate([centre - size / 2, centre + size / 2], axis=1)[:, [1, 0, 3, 2]]
            kept = nms(boxes, scores)
        with nvtx.annotate("landmark"):
            landmarks.set_tensor(landmarks.get_input_details()[0]["index"], image[None])
            landmarks.invoke()
            points = landmarks.get_tensor(landmarks.get_output_details()[0]["index"])
    durations.append(time.perf_counter_ns() - started)
cpu_marks.append(time.process_time_ns())
wall_marks.append(time.perf_counter_ns())

print(f"First Inference : {durations[0] / 1e6:.2f} ms")
print(f"Inference : {np.mean(durations[1:]) / 1e6:.2f} ms")
print(json.dumps({"frames": args.frames, "threads": args.threads, "durations_ns": durations, "kept": len(kept),
                  "landmarks": int(points.size), "cpu_marks_ns": cpu_marks, "wall_marks_ns": wall_marks}))
