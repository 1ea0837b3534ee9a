"""A TFLite model's graph run as OpenGL compute shaders: posebench's stand-in for TFLite's GPU delegate.

The model is read by the interpreter itself (ai-edge-litert): its op list, its tensors' shapes, and its
weights once they are dense float32 (the interpreter densifies and dequantizes them in one reference run).
Each op then runs as a compute shader on buffers that stay on the GPU from the input to the outputs; the
frame ends as TFLite's GL delegate's does, the CPU waiting for the GPU (glFinish) before reading the outputs.

What the op list does not say (padding, fused activation, resize mode) is chosen by checking the op's output
against the reference run's, op by op, when the graph is loaded; an op that no choice reproduces, or an op
kind not written here, is refused with its name. On a Jetson the context is the board's GPU; on a machine
without one it is Mesa's llvmpipe, which runs the shaders on the CPU.

Runs on Python 3.6+ with numpy, ai-edge-litert and moderngl (a headless EGL context, GL 4.3 or later).
"""
import itertools
import math

import numpy as np

LOCAL_SIZE = 64

HEADER = f"""#version 430
layout(local_size_x = {LOCAL_SIZE}) in;
layout(std430, binding = 0) readonly buffer In0 {{ float x[]; }};
layout(std430, binding = 1) readonly buffer In1 {{ float w[]; }};
layout(std430, binding = 2) readonly buffer In2 {{ float b[]; }};
layout(std430, binding = 3) writeonly buffer Out {{ float y[]; }};
uniform ivec4 ins;   // input: height, width, channels
uniform ivec4 outs;  // output: height, width, channels, element count
uniform ivec4 geo;   // op-specific: kernel h, kernel w, stride h, stride w
uniform ivec4 off;   // op-specific: offsets (pad top, pad left, channel offset, multiplier)
uniform int act;     // 0 none, 1 relu, 2 relu6
float activate(float v) {{
    if (act == 1) return max(v, 0.0);
    if (act == 2) return clamp(v, 0.0, 6.0);
    return v;
}}
void main() {{
    int i = int(gl_GlobalInvocationID.x);
    if (i >= outs.w) return;
    int oc = i % outs.z;
    int ox = (i / outs.z) % outs.y;
    int oy = i / (outs.z * outs.y);
"""

BODIES = {
    # weights [out channels, kh, kw, in channels]
    "CONV_2D": """
    float s = b[oc];
    for (int ky = 0; ky < geo.x; ky++) {
        int iy = oy * geo.z + ky - off.x;
        if (iy < 0 || iy >= ins.x) continue;
        for (int kx = 0; kx < geo.y; kx++) {
            int ix = ox * geo.w + kx - off.y;
            if (ix < 0 || ix >= ins.y) continue;
            int xi = (iy * ins.y + ix) * ins.z;
            int wi = ((oc * geo.x + ky) * geo.y + kx) * ins.z;
            for (int ic = 0; ic < ins.z; ic++) s += x[xi + ic] * w[wi + ic];
        }
    }
    y[i] = activate(s);
}""",
    # weights [1, kh, kw, out channels]; output channel oc reads input channel oc / multiplier
    "DEPTHWISE_CONV_2D": """
    float s = b[oc];
    int ic = oc / off.w;
    for (int ky = 0; ky < geo.x; ky++) {
        int iy = oy * geo.z + ky - off.x;
        if (iy < 0 || iy >= ins.x) continue;
        for (int kx = 0; kx < geo.y; kx++) {
            int ix = ox * geo.w + kx - off.y;
            if (ix < 0 || ix >= ins.y) continue;
            s += x[(iy * ins.y + ix) * ins.z + ic] * w[(ky * geo.y + kx) * outs.z + oc];
        }
    }
    y[i] = activate(s);
}""",
    "ADD": """
    y[i] = activate(x[i] + w[i]);
}""",
    # zeros around the input: off = (top, left, channels before)
    "PAD": """
    int iy = oy - off.x, ix = ox - off.y, ic = oc - off.z;
    bool inside = iy >= 0 && iy < ins.x && ix >= 0 && ix < ins.y && ic >= 0 && ic < ins.z;
    y[i] = inside ? x[(iy * ins.y + ix) * ins.z + ic] : 0.0;
}""",
    # TFLite's DCR order; geo.x is the block size
    "DEPTH_TO_SPACE": """
    int k = geo.x;
    int ic = ((oy % k) * k + (ox % k)) * outs.z + oc;
    y[i] = x[((oy / k) * ins.y + ox / k) * ins.z + ic];
}""",
    # off.x: align corners, off.y: half-pixel centres
    "RESIZE_BILINEAR": """
    float sy = (off.x == 1 && outs.x > 1) ? float(ins.x - 1) / float(outs.x - 1) : float(ins.x) / float(outs.x);
    float sx = (off.x == 1 && outs.y > 1) ? float(ins.y - 1) / float(outs.y - 1) : float(ins.y) / float(outs.y);
    float fy = off.y == 1 ? (float(oy) + 0.5) * sy - 0.5 : float(oy) * sy;
    float fx = off.y == 1 ? (float(ox) + 0.5) * sx - 0.5 : float(ox) * sx;
    fy = max(fy, 0.0); fx = max(fx, 0.0);
    int y0 = min(int(floor(fy)), ins.x - 1), x0 = min(int(floor(fx)), ins.y - 1);
    int y1 = min(y0 + 1, ins.x - 1), x1 = min(x0 + 1, ins.y - 1);
    float dy = fy - float(y0), dx = fx - float(x0);
    float top = mix(x[(y0 * ins.y + x0) * ins.z + oc], x[(y0 * ins.y + x1) * ins.z + oc], dx);
    float bottom = mix(x[(y1 * ins.y + x0) * ins.z + oc], x[(y1 * ins.y + x1) * ins.z + oc], dx);
    y[i] = mix(top, bottom, dy);
}""",
}

# one input's slice of a concatenation: outs = (outer, inner of the output, inner of the input, count),
# off.z = where the slice starts in the output's inner run
COPY_SLICE = f"""#version 430
layout(local_size_x = {LOCAL_SIZE}) in;
layout(std430, binding = 0) readonly buffer In0 {{ float x[]; }};
layout(std430, binding = 3) buffer Out {{ float y[]; }};
uniform ivec4 outs;
uniform ivec4 off;
void main() {{
    int i = int(gl_GlobalInvocationID.x);
    if (i >= outs.w) return;
    int o = i / outs.z, j = i % outs.z;
    y[o * outs.y + off.z + j] = x[i];
}}
"""

# how many elements to compare an op's output against the reference run's on, and how close it must be
TOLERANCE = 1e-3
ACTIVATIONS = {0: lambda v: v, 1: lambda v: np.maximum(v, 0), 2: lambda v: np.clip(v, 0, 6)}
CONSTANT_OPS = ("DENSIFY", "DEQUANTIZE")


class GraphError(Exception):
    """The model has an op this graph cannot run, or one whose options no choice reproduces."""


def hwc(shape):
    """(height, width, channels) of an NHWC tensor with batch 1; a tensor of fewer axes is one row."""
    dims = [int(d) for d in shape]
    if len(dims) == 4:
        return dims[1], dims[2], dims[3]
    if len(dims) == 3:
        return 1, dims[1], dims[2]
    return 1, 1, int(np.prod(dims))


def strides_and_padding(size, kernel, out):
    """The (stride, padding before) pairs that give an output of that size, VALID's then SAME's."""
    pairs = []
    for stride in (1, 2, 3, 4):
        if size >= kernel and (size - kernel) // stride + 1 == out:
            pairs.append((stride, 0))
        if -(-size // stride) == out:
            pairs.append((stride, max((out - 1) * stride + kernel - size, 0) // 2))
    return sorted(set(pairs), key=pairs.index)


def close(mine, theirs):
    scale = max(1.0, float(np.max(np.abs(theirs))) if theirs.size else 1.0)
    return mine.shape == theirs.shape and float(np.max(np.abs(mine - theirs))) <= TOLERANCE * scale


class GlGraph:
    """The graph of one model, on one GL context, checked op by op against the interpreter's run."""

    def __init__(self, ctx, reference, image):
        """reference: an ai-edge-litert Interpreter made with experimental_preserve_all_tensors=True and
        the built-in kernels; image: an input it can run once (the check uses its tensors)."""
        self.ctx = ctx
        self.renderer = ctx.info["GL_RENDERER"]
        self.programs = {}
        self.steps = []  # (op name, program, uniforms, input buffers, output buffer, element count)
        self.dispatches = 0
        details = {t["index"]: t for t in reference.get_tensor_details()}
        self.input = reference.get_input_details()[0]
        self.outputs = reference.get_output_details()
        reference.set_tensor(self.input["index"], image)
        reference.invoke()
        produced = {}
        ops = reference._get_ops_details()  # the op list, in the order the interpreter runs it
        for op in ops:
            for out in op["outputs"]:
                produced[int(out)] = op
        constant = set(i for i in details if i not in produced and i != self.input["index"])
        for op in ops:
            if op["op_name"] in CONSTANT_OPS and all(int(i) in constant for i in op["inputs"]):
                constant.update(int(o) for o in op["outputs"])
        self.buffers = {}
        self.constants = constant
        for index in constant:
            value = reference.get_tensor(index)
            if value.dtype == np.float32 and value.size:
                self.buffers[index] = ctx.buffer(np.ascontiguousarray(value).tobytes())
        self.buffers[self.input["index"]] = ctx.buffer(reserve=int(np.prod(self.input["shape"])) * 4)
        self.shapes = {i: tuple(int(d) for d in details[i]["shape"]) for i in details}
        for op in ops:
            if all(int(o) in constant for o in op["outputs"]):
                continue
            self._add(op, reference)

    def _program(self, name, source):
        if name not in self.programs:
            self.programs[name] = self.ctx.compute_shader(source)
        return self.programs[name]

    def _out_buffer(self, index):
        buffer = self.ctx.buffer(reserve=max(int(np.prod(self.shapes[index])), 1) * 4)
        self.buffers[index] = buffer
        return buffer

    def _add(self, op, reference):
        name = op["op_name"]
        inputs = [int(i) for i in op["inputs"] if int(i) >= 0]
        out = int(op["outputs"][0])
        expected = reference.get_tensor(out)
        if name == "RESHAPE":  # the same floats in the same order: the output is the input's buffer
            self.buffers[out] = self.buffers[inputs[0]]
            return
        if name == "CONCATENATION":
            self._add_concatenation(inputs, out, expected, reference)
            return
        if name not in BODIES:
            raise GraphError("the GL graph has no shader for {} (op {})".format(name, op["index"]))
        uniforms, candidates = self._uniforms(name, inputs, out)
        program = self._program(name, HEADER + BODIES[name])
        ins = [self.buffers[i] for i in inputs if i in self.buffers]
        buffer = self._out_buffer(out)
        count = int(np.prod(self.shapes[out]))
        for choice in candidates:
            step = (name, program, dict(uniforms, **choice), ins, buffer, count)
            self._feed(inputs, reference)
            self._run(step)
            mine = np.frombuffer(buffer.read(), dtype=np.float32).reshape(expected.shape)
            if close(mine, expected):
                self.steps.append(step)
                return
        raise GraphError("the GL graph does not reproduce {} (op {}) with any of its options".format(
            name, op["index"]))

    def _uniforms(self, name, inputs, out):
        ih, iw, ic = hwc(self.shapes[inputs[0]])
        oh, ow, oc = hwc(self.shapes[out])
        count = oh * ow * oc
        uniforms = {"ins": (ih, iw, ic, 0), "outs": (oh, ow, oc, count), "geo": (0, 0, 0, 0),
                    "off": (0, 0, 0, 1)}
        activations = [{"act": a} for a in (0, 1, 2)]
        if name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            weights = self.shapes[inputs[1]]
            kh, kw = weights[1], weights[2]
            uniforms["off"] = (0, 0, 0, max(1, oc // ic))
            candidates = []
            for (sh, top), (sw, left) in itertools.product(
                    strides_and_padding(ih, kh, oh), strides_and_padding(iw, kw, ow)):
                for a in activations:
                    candidates.append(dict(a, geo=(kh, kw, sh, sw), off=(top, left, 0, max(1, oc // ic))))
            return uniforms, candidates
        if name == "ADD":
            if self.shapes[inputs[0]] != self.shapes[inputs[1]]:
                shapes = (self.shapes[inputs[0]], self.shapes[inputs[1]])
                raise GraphError("the GL graph adds tensors of one shape only, not {} and {}".format(*shapes))
            return uniforms, activations
        if name == "PAD":
            # the paddings are a constant int32 tensor: read them from the shapes instead
            uniforms["off"] = (None, None, None, 1)
            return uniforms, self._pad_offsets(ih, iw, ic, oh, ow, oc)
        if name == "DEPTH_TO_SPACE":
            uniforms["geo"] = (oh // ih, 0, 0, 0)
            return uniforms, [{"act": 0}]
        if name == "RESIZE_BILINEAR":
            return uniforms, [{"act": 0, "off": (a, h, 0, 1)} for h in (1, 0) for a in (0, 1) if not (a and h)]
        return uniforms, [{"act": 0}]

    @staticmethod
    def _pad_offsets(ih, iw, ic, oh, ow, oc):
        """Where the input sits in the padded output: every split of the added rows, columns and
        channels, most even first (the check against the reference picks the one the model has)."""
        def splits(extra):
            return sorted(range(extra + 1), key=lambda before: abs(2 * before - extra))
        return [{"act": 0, "off": (top, left, before, 1)} for top in splits(oh - ih)[:3]
                for left in splits(ow - iw)[:3] for before in splits(oc - ic)[:3]]

    def _add_concatenation(self, inputs, out, expected, reference):
        shape = self.shapes[out]
        axis = next((a for a in range(len(shape)) if any(self.shapes[i][a] != shape[a] for i in inputs)),
                    len(shape) - 1)
        outer = int(np.prod(shape[:axis]))
        inner_out = int(np.prod(shape[axis:]))
        program = self._program("CONCATENATION", COPY_SLICE)
        buffer = self._out_buffer(out)
        start = 0
        for i in inputs:
            inner = int(np.prod(self.shapes[i][axis:]))
            count = outer * inner
            uniforms = {"outs": (outer, inner_out, inner, count), "off": (0, 0, start, 0)}
            self.steps.append(("CONCATENATION", program, uniforms, [self.buffers[i]], buffer, count))
            start += inner
        self._feed(inputs, reference)
        for step in self.steps[-len(inputs):]:
            self._run(step)
        if not close(np.frombuffer(buffer.read(), dtype=np.float32).reshape(expected.shape), expected):
            raise GraphError(f"the GL graph does not reproduce a concatenation on axis {axis}")

    def _feed(self, inputs, reference):
        """An op is checked on the reference run's own inputs, so that each op's check stands alone."""
        for i in inputs:
            if i in self.buffers and i not in self.constants:
                value = np.ascontiguousarray(reference.get_tensor(i), dtype=np.float32)
                self.buffers[i].write(value.tobytes())

    def _run(self, step):
        _, program, uniforms, ins, out, count = step
        for key, value in uniforms.items():
            uniform = program.get(key, None)  # a uniform the shader does not read is not there
            if uniform is not None:
                uniform.value = value
        for binding, buffer in enumerate(ins[:3]):
            buffer.bind_to_storage_buffer(binding)
        out.bind_to_storage_buffer(3)
        program.run(group_x=int(math.ceil(count / float(LOCAL_SIZE))))
        self.ctx.memory_barrier()
        self.dispatches += 1

    def submit(self, image):
        """Upload one input and queue every op's dispatch; nothing waits for the GPU here."""
        self.buffers[self.input["index"]].write(np.ascontiguousarray(image, dtype=np.float32).tobytes())
        for step in self.steps:
            self._run(step)

    def wait_and_read(self):
        """The CPU waits for the GPU to finish the frame (glFinish), then reads the outputs back."""
        self.ctx.finish()
        return [np.frombuffer(self.buffers[int(o["index"])].read(), dtype=np.float32).reshape(o["shape"])
                for o in self.outputs]
