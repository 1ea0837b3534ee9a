"""Whether a capture holds what it was asked for. nsys exits 0 and writes a report when a trace it was asked for
recorded nothing (an app with no OpenGL calls under --trace opengl, CPU sampling the kernel refused): each such
gap is named, with its likely reason, for the run's validity flags and the verdict."""
from __future__ import annotations

from dataclasses import dataclass

from ..export.reads import OSRT_CALL_CLASS
from ..export.trace import Trace
from .frames import NVTX_RANGE_TYPES


@dataclass(frozen=True)
class Expected:
    what: str            # what the report holds none of
    table: str
    condition: str       # SQL over the table's rows: the rows that count
    why: str             # the likely reasons


EXPECTED = {
    "opengl": Expected("OpenGL calls", "OPENGL_API", "1",
                       "the app made no OpenGL call nsys could hook: it draws with another API (Vulkan, a toolkit's "
                       "own renderer), loads its GL library in a way nsys does not hook, or ran without a display "
                       "and drew nothing"),
    "cuda": Expected("CUDA calls", "CUPTI_ACTIVITY_KIND_RUNTIME", "1",
                     "the app made no CUDA call nsys could see: it ran on the CPU (a framework build without CUDA, "
                     "a CPU fallback), or links a static CUDA runtime nsys does not hook"),
    "nvtx": Expected("NVTX ranges", "NVTX_EVENTS", f"eventType IN ({','.join(map(str, NVTX_RANGE_TYPES))})",
                     "the app pushed no NVTX range nsys heard: its NVTX calls are not compiled in, or its Python "
                     "nvtx package is one nsys 2022.4 does not hear (0.2.16 and newer; 0.2.8 works)"),
    "osrt": Expected("OS runtime calls", "OSRT_API", f"eventClass = {OSRT_CALL_CLASS}",
                     "nsys hooked none of the app's C library calls: the app is statically linked, or it ended "
                     "before nsys's injection loaded"),
}
KERNELS = Expected("CUDA kernels", "CUPTI_ACTIVITY_KIND_KERNEL", "1",
                   "the app made CUDA calls but launched no kernel in the capture (it loaded, then ended or waited), "
                   "or the GPU's activity was not recorded")
SAMPLES = Expected("CPU samples", "COMPOSITE_EVENTS", "1",
                   "the kernel refused CPU sampling: a container's seccomp profile denies perf_event_open (Docker's "
                   "default one does), nsys ran as a user without root while kernel.perf_event_paranoid is above 2, "
                   "or the kernel has no perf events; profile as root (ansible_become) outside such a container")


def _holds(trace: Trace, expected: Expected) -> bool:
    if not trace.has(expected.table):
        return False
    condition = expected.condition if expected.condition == "1" or trace.has(
        expected.table, expected.condition.split()[0]) else "1"
    return trace.local_conn().execute(
        f"SELECT 1 FROM {expected.table} WHERE {condition} LIMIT 1").fetchone() is not None


def capture_gaps(trace: Trace, traces: tuple[str, ...], sampled: bool) -> list[dict[str, str]]:
    """[{'code': 'empty_trace', 'trace', 'what', 'why'}] for each trace asked for that recorded nothing."""
    wanted = [(name, EXPECTED[name]) for name in traces if name in EXPECTED]
    if "cuda" in traces and _holds(trace, EXPECTED["cuda"]):
        wanted.append(("cuda", KERNELS))
    if sampled:
        wanted.append(("sample", SAMPLES))
    return [{"code": "empty_trace", "trace": name, "what": f"nsys wrote a report but it holds no {expected.what}",
             "why": expected.why} for name, expected in wanted if not _holds(trace, expected)]
