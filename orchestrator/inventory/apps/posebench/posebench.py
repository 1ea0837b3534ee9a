"""posebench: a TFLite pose pipeline that prints like the seeds' benchmarks, for studies on any machine.

Per frame: MediaPipe 0.10.14's pose_detection.tflite (an SSD with 2254 anchors), non-maximum suppression
over its boxes, then pose_landmark_full.tflite, on ai-edge-litert. Each frame is an NVTX range "frame"
holding "detect", "nms" and "landmark" (Python nvtx; 0.2.8 reaches nsys 2022.4). It prints the seed's
lines, "First Inference : X ms" (the first frame, delegate set-up included) and "Inference : Y ms" (the
mean of the others), then one JSON line with every frame's time.

Variables: --delegate xnnpack|none|gl (XNNPACK, TFLite's CPU delegate; the built-in kernels alone; or the
detector's graph as OpenGL compute shaders, gl_delegate.py, the stand-in for TFLite's GPU delegate: each
frame's "detect" range queues the dispatches and its "WaitForCompletion" range holds the CPU's wait for the
GPU, glFinish, then the outputs' read-back; the landmark model and NMS stay on the CPU with XNNPACK),
--threads N, --nms vectorised|loop (numpy over all boxes, or a Python loop per box), --frames N.
Runs wherever ai-edge-litert does (x86-64, aarch64 boards); the models sit beside it (--models); gl needs
moderngl and a GL 4.3 context (the board's GPU, or Mesa's llvmpipe on the CPU where there is none), and
prints its renderer on stderr.
"""
import argparse
import json
import os
import signal
import sys
import time

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

# gl_context.py and gl_delegate.py sit beside this file as the run folder shows it (where each is a link to
# a copy named by its hash, the folder Python would look in otherwise)
HERE = os.path.dirname(os.path.abspath(__file__))

try:
    import nvtx
except ImportError:  # no ranges without it; the timings stay
    nvtx = None


class _NoRange:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def mark(name):
    return nvtx.annotate(name) if nvtx is not None else _NoRange()


def nms_vectorised(boxes, scores, limit=0.3, keep=10):
    """Greedy non-maximum suppression, best score first, one numpy pass over the boxes left per kept box."""
    order = np.argsort(-scores)
    kept = []  # type: list
    area = np.prod(boxes[:, 2:] - boxes[:, :2], axis=1)
    while len(order) and len(kept) < keep:
        best, order = order[0], order[1:]
        kept.append(int(best))
        top = np.maximum(boxes[best, :2], boxes[order, :2])
        bottom = np.minimum(boxes[best, 2:], boxes[order, 2:])
        overlap = np.prod(np.clip(bottom - top, 0, None), axis=1)
        order = order[overlap / (area[best] + area[order] - overlap + 1e-9) < limit]
    return kept


def nms_loop(boxes, scores, limit=0.3, keep=10):
    """The same suppression box by box in Python: what NMS on the CPU costs without vector code."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    kept = []  # type: list
    for i in order:
        if len(kept) >= keep:
            break
        y0, x0, y1, x1 = boxes[i]
        area = (y1 - y0) * (x1 - x0)
        suppressed = False
        for j in kept:
            b0, a0, b1, a1 = boxes[j]
            h, w = min(y1, b1) - max(y0, b0), min(x1, a1) - max(x0, a0)
            overlap = h * w if h > 0 and w > 0 else 0.0
            if overlap / (area + (b1 - b0) * (a1 - a0) - overlap + 1e-9) >= limit:
                suppressed = True
                break
        if not suppressed:
            kept.append(i)
    return kept


def cpu_detector(detector):
    def detect(crop):
        with mark("detect"):
            detector.set_tensor(detector.get_input_details()[0]["index"], crop)
            detector.invoke()
            return (detector.get_tensor(detector.get_output_details()[0]["index"])[0],
                    detector.get_tensor(detector.get_output_details()[1]["index"])[0, :, 0])
    return detect


def gl_detector(args, image):
    """The detector's graph on OpenGL compute, checked op by op against the interpreter's own run."""
    from gl_context import headless_context  # type: ignore[import-not-found]
    from gl_delegate import GlGraph  # type: ignore[import-not-found]
    reference = Interpreter(model_path=os.path.join(args.models, "pose_detection.tflite"),
                            experimental_preserve_all_tensors=True,
                            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    reference.allocate_tensors()
    with mark("gl setup"):
        graph = GlGraph(headless_context(), reference, image[None, 16:240, 16:240])
    print(f"GL_RENDERER: {graph.renderer}", file=sys.stderr)
    print(f"GL graph: {len(graph.steps)} compute dispatches per frame", file=sys.stderr)

    def detect(crop):
        with mark("detect"):
            graph.submit(crop)
        with mark("WaitForCompletion"):
            raw, logits = graph.wait_and_read()
        return raw[0], logits[0, :, 0]
    return detect


def main():
    if "gl" in sys.argv and sys.argv[sys.argv.index("gl") - 1] == "--delegate":
        # before anything loads: a tracer sees GL calls only from libraries there from the start
        sys.path.insert(0, HERE)
        from gl_context import restart_with_gl_preloaded
        restart_with_gl_preloaded([sys.executable, os.path.abspath(__file__), *sys.argv[1:]])
    parser = argparse.ArgumentParser(description="TFLite pose pipeline benchmark")
    parser.add_argument("--models", default=".", help="folder with the two .tflite files (default: here)")
    parser.add_argument("--delegate", choices=("xnnpack", "none", "gl"), default="xnnpack")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--nms", choices=("vectorised", "loop"), default="vectorised")
    parser.add_argument("--frames", type=int, default=40)
    args = parser.parse_args()
    if args.frames < 2 or args.threads < 1:
        parser.error("--frames must be 2 or more and --threads 1 or more")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    resolver = OpResolverType.AUTO if args.delegate != "none" else OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES

    def load(name):
        interpreter = Interpreter(model_path=os.path.join(args.models, name), num_threads=args.threads,
                                  experimental_op_resolver_type=resolver)
        interpreter.allocate_tensors()
        return interpreter

    nms = nms_vectorised if args.nms == "vectorised" else nms_loop
    image = np.random.default_rng(7).random((256, 256, 3), dtype=np.float32)
    durations = []
    kept, points = [], np.zeros(0)
    started = time.perf_counter_ns()
    detect = gl_detector(args, image) if args.delegate == "gl" else cpu_detector(load("pose_detection.tflite"))
    landmarks = load("pose_landmark_full.tflite")
    for _ in range(args.frames):
        with mark("frame"):
            raw, logits = detect(image[None, 16:240, 16:240])
            with mark("nms"):
                scores = 1 / (1 + np.exp(-np.clip(logits, -80, 80)))
                centre, size = raw[:, :2], np.abs(raw[:, 2:4]) + 1e-3
                boxes = np.concatenate([centre - size / 2, centre + size / 2], axis=1)[:, [1, 0, 3, 2]]
                kept = nms(boxes, scores)
            with mark("landmark"):
                landmarks.set_tensor(landmarks.get_input_details()[0]["index"], image[None])
                landmarks.invoke()
                points = landmarks.get_tensor(landmarks.get_output_details()[0]["index"])
        now = time.perf_counter_ns()
        durations.append(now - started)
        started = now
    print(f"First Inference : {durations[0] / 1e6:.2f} ms")
    print(f"Inference : {float(np.mean(durations[1:])) / 1e6:.2f} ms")
    print(json.dumps({"frames": args.frames, "threads": args.threads, "delegate": args.delegate, "nms": args.nms,
                      "durations_ns": durations, "kept": len(kept), "landmarks": int(points.size)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
