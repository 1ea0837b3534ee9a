"""posebench's GL delegate for real: the pose detector's graph as OpenGL compute shaders on this machine's
GL (Mesa's llvmpipe on a headless EGL context), against the interpreter's CPU kernels on the same model."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO

from orchestrator.parsers.renderer import gl_renderer, is_software

APP_DIR = REPO / "orchestrator" / "inventory" / "apps" / "posebench"
MODELS = Path.home() / ".cache" / "orchestrate" / "models"  # where scripts/fetch_pose_models.py puts them
sys.path.insert(0, str(APP_DIR))
import gl_delegate  # noqa: E402  (the app's own module, as posebench imports it on a board)
import posebench  # noqa: E402

# The detector's raw outputs (box regressors up to ~150, logits up to ~300) may differ from the CPU kernels'
# by the order of float additions only: at most this share of the output's largest magnitude.
TOLERANCE = 5e-3


def test_the_strides_and_padding_that_give_an_output_size():
    assert gl_delegate.strides_and_padding(18, 5, 7) == [(2, 0)]  # VALID after an explicit PAD
    assert gl_delegate.strides_and_padding(224, 3, 112) == [(2, 0)]  # SAME: the extra row goes after
    assert gl_delegate.strides_and_padding(112, 3, 112) == [(1, 1)]
    assert gl_delegate.strides_and_padding(7, 1, 7) == [(1, 0)]
    assert gl_delegate.strides_and_padding(8, 3, 5) == []


def interpreter(**options):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    made = Interpreter(model_path=str(MODELS / "pose_detection.tflite"),
                       experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES, **options)
    made.allocate_tensors()
    return made


@pytest.mark.integration
def test_the_gl_graph_finds_what_the_cpu_kernels_find():
    import moderngl
    context = moderngl.create_standalone_context(backend="egl", require=430)
    try:
        rng = np.random.default_rng(7)
        graph = gl_delegate.GlGraph(context, interpreter(experimental_preserve_all_tensors=True),
                                    rng.random((1, 224, 224, 3), dtype=np.float32))
        assert "llvmpipe" in graph.renderer
        kinds = [step[0] for step in graph.steps]
        assert (kinds.count("CONV_2D"), kinds.count("DEPTHWISE_CONV_2D"), kinds.count("ADD")) == (45, 28, 15)
        cpu = interpreter()
        for _ in range(2):  # inputs the load-time check never saw
            image = rng.random((1, 224, 224, 3), dtype=np.float32)
            cpu.set_tensor(cpu.get_input_details()[0]["index"], image)
            cpu.invoke()
            expected = [cpu.get_tensor(d["index"]) for d in cpu.get_output_details()]
            before = graph.dispatches
            graph.submit(image)
            got = graph.wait_and_read()
            assert graph.dispatches - before == len(graph.steps) == 107
            for mine, theirs in zip(got, expected):
                assert mine.shape == theirs.shape
                assert np.max(np.abs(mine - theirs)) <= TOLERANCE * np.max(np.abs(theirs))
            boxes = [np.concatenate([raw[0, :, :2] - 0.5, raw[0, :, :2] + 0.5], axis=1)
                     for raw in (got[0], expected[0])]
            assert posebench.nms_vectorised(boxes[0], got[1][0, :, 0]) == \
                posebench.nms_vectorised(boxes[1], expected[1][0, :, 0])
    finally:
        context.release()


@pytest.mark.integration
def test_posebench_on_gl_prints_the_seeds_lines_and_names_its_renderer():
    done = subprocess.run([sys.executable, str(APP_DIR / "posebench.py"), "--models", str(MODELS), "--delegate",
                           "gl", "--frames", "3"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    first, mean, figures = done.stdout.strip().splitlines()
    record = json.loads(figures)
    assert (record["delegate"], record["frames"], len(record["durations_ns"])) == ("gl", 3, 3)
    assert first == f"First Inference : {record['durations_ns'][0] / 1e6:.2f} ms"
    assert mean == f"Inference : {np.mean(record['durations_ns'][1:]) / 1e6:.2f} ms"
    assert record["kept"] == 10 and record["landmarks"] == 195
    [renderer] = [line for line in done.stderr.splitlines() if line.startswith("GL_RENDERER: ")]
    assert gl_renderer(done.stderr) == renderer.removeprefix("GL_RENDERER: ")
    assert is_software(renderer) and renderer.startswith("GL_RENDERER: llvmpipe (LLVM ")
    assert "GL graph: 107 compute dispatches per frame" in done.stderr.splitlines()
