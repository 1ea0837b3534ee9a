"""The bottleneck in one word plus the figures behind it, in words a user understands.

Rules, first match wins (shares are of the analysis window, on the thread that delimits frames or, without
frames, the app thread that used the most CPU):
  gpu_wait    the thread spends >= 30 % blocked in GPU-wait calls (glFinish, eglClientWaitSync, buffer swaps,
              cudaStreamSynchronize...), or >= 30 % of its samples are in wait functions (WaitForCompletion...);
              the summary names the wait, the GPU work waited for and the GPU (the app's GL_RENDERER or the
              board's GPU), and a software renderer (llvmpipe, or its llvmpipe-N threads) as the CPU it is
  gpu_bound   GPU work runs >= 85 % of the window
  cpu_bound   the thread is on a CPU >= 70 % of the window
  io_or_sleep the thread spends >= 50 % in blocking OS calls (sleep, poll, read, condition waits...)
  unknown     none of these
Confidence is "high" when the deciding share is well past its threshold, else "medium"; "low" for unknown.
Each evidence line comes again in ``findings`` with where it happens: the window and, with frames, the
frames carrying most of it (start and end in ns), for the page to mark and for --json users to jump to.
"""
from __future__ import annotations

from ..parsers.renderer import is_software
from .calls import SWAP_CALLS
from .evidence import Evidence
from .where import Where

GPU_WAIT_SHARE, GPU_BUSY_SHARE, CPU_SHARE, BLOCKING_SHARE = 0.30, 0.85, 0.70, 0.50


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3g} ms"


def _per_frame(ev: Evidence, ns: int) -> str:
    if ev.frame_count:
        return f"{_ms(ns / ev.frame_count)} of each {_ms(ev.window_ns / ev.frame_count)} frame"
    return f"{_ms(ns)} of the {_ms(ev.window_ns)} window"


def decide(ev: Evidence) -> dict:
    on = f" on {ev.thread}" if ev.thread else ""
    findings: list[dict] = []

    def found(text: str, kind: str, at: Where | None = None, names: tuple[str, ...] = ()) -> None:
        """One finding: its words, where it happens, and the calls or function it is about, on which thread."""
        findings.append({"text": text, "kind": kind, **(at or Where(*ev.window)).to_json(), "names": list(names),
                         "thread": ev.thread if names else None})

    wait_share = ev.gpu_wait_ns / ev.window_ns if ev.window_ns else 0.0
    symbol_share = ev.wait_symbol_pct / 100.0
    blocking_share = ev.blocking_ns / ev.window_ns if ev.window_ns else 0.0
    cpu_share = (ev.thread_cpu_pct or 0.0) / 100.0
    gpu_share = (ev.gpu_busy_pct or 0.0) / 100.0
    if wait_share >= 0.01:
        found(f"{wait_share * 100:.0f} % of the time{on} is spent waiting for the GPU in "
              f"{', '.join(ev.gpu_wait_calls[:3])} ({_per_frame(ev, ev.gpu_wait_ns)})", "gpu_wait", ev.gpu_wait_where,
              ev.gpu_wait_calls)
    if ev.wait_symbol:
        found(f"{ev.wait_symbol_pct:.0f} % of CPU samples{on} are inside {ev.wait_symbol}", "wait_function",
              ev.wait_symbol_where, (ev.wait_symbol,))
    if ev.gpu_busy_pct is not None:
        work = f" ({', '.join(ev.gpu_work_names[:3])})" if ev.gpu_work_names else ""
        found(f"GPU work recorded by nsys{work} covers {ev.gpu_busy_pct:.0f} % of the window", "gpu_busy", None,
              ev.gpu_work_names[:3])
    renderer = _renderer(ev)
    if renderer:
        found(renderer, "renderer")
    if ev.thread_cpu_pct is not None:
        found(f"{ev.thread or 'the busiest thread'} is on a CPU {ev.thread_cpu_pct:.0f} % of the window", "thread_cpu")
    if ev.busy_cores is not None:
        found(f"{ev.busy_cores:.2g} cores busy on average", "cores")
    if ev.blocking_ns:
        found(f"{blocking_share * 100:.0f} % of the time{on} is in blocking OS calls "
              f"({', '.join(ev.blocking_calls[:3])})", "blocking", ev.blocking_where, ev.blocking_calls)
    if ev.hottest_self:
        found(f"hottest function: {ev.hottest_self} ({ev.hottest_self_pct:.0f} % of samples)", "hottest_function",
              ev.hottest_where)
    evidence = [finding["text"] for finding in findings]

    deciding = max(wait_share, symbol_share)
    if deciding >= GPU_WAIT_SHARE:
        kind, share, threshold = "gpu_wait", deciding, GPU_WAIT_SHARE
    elif gpu_share >= GPU_BUSY_SHARE:
        kind, share, threshold = "gpu_bound", gpu_share, GPU_BUSY_SHARE
    elif cpu_share >= CPU_SHARE:
        kind, share, threshold = "cpu_bound", cpu_share, CPU_SHARE
    elif blocking_share >= BLOCKING_SHARE:
        kind, share, threshold = "io_or_sleep", blocking_share, BLOCKING_SHARE
    else:
        return {"kind": "unknown", "confidence": "low", "summary": "no single bottleneck stands out",
                "evidence": evidence, "findings": findings}
    confidence = "high" if share >= threshold + (1 - threshold) / 2 else "medium"
    return {"kind": kind, "confidence": confidence, "summary": _summary(kind, share, ev, on), "evidence": evidence,
            "findings": findings}


def _software(ev: Evidence) -> bool:
    return is_software(ev.renderer) or bool(ev.software_gpu)


def _renderer(ev: Evidence) -> str | None:
    """Which GPU ran the work, and where a software renderer runs it: its name (the app's GL_RENDERER or the
    board's GPU) and its render threads."""
    threads = f" ({', '.join(ev.software_gpu[:4])}...)" if ev.software_gpu else ""
    if not _software(ev):
        return f"the GPU is {ev.renderer}" if ev.renderer else None
    if ev.renderer:
        return f"the GPU is {ev.renderer}, a software renderer: its work runs on the CPU{threads}"
    return f"the GPU is a software renderer{threads}: its work runs on the CPU"


def _waited_for(ev: Evidence, lead: str = " to run ") -> str:
    """What the GPU works on (the work nsys recorded), on which GPU, and where a software renderer runs it."""
    work = f"{lead}{', '.join(ev.gpu_work_names[:2])}" if ev.gpu_work_names else ""
    if _software(ev):
        named = f"{ev.renderer}: a software renderer, " if ev.renderer else "a software renderer: "
        threads = f", in {ev.software_gpu[0]}..." if ev.software_gpu else ""
        return f"{work} ({named}the GPU's work runs on the CPU{threads})"
    return f"{work} on {ev.renderer}" if ev.renderer else work


def _summary(kind: str, share: float, ev: Evidence, on: str) -> str:
    if kind == "gpu_wait":
        if ev.wait_symbol and ev.wait_symbol_pct / 100.0 >= share:  # decided by where the CPU samples land
            return (f"{share * 100:.0f} % of the CPU samples{on} are in {ev.wait_symbol}, waiting for the GPU"
                    f"{_waited_for(ev)}")
        vsync = " (or for vsync, if it is on)" if ev.gpu_wait_calls[0] in SWAP_CALLS else ""
        return (f"{share * 100:.0f} % of the time{on} is spent in {ev.gpu_wait_calls[0]} waiting for the GPU"
                f"{_waited_for(ev)}{vsync}")
    if kind == "gpu_bound":
        return f"the GPU is busy {share * 100:.0f} % of the time: GPU work sets the pace{_waited_for(ev, ', mostly ')}"
    if kind == "cpu_bound":
        hot = f", mostly in {ev.hottest_self}" if ev.hottest_self else ""
        return f"{ev.thread or 'the busiest thread'} computes on a CPU {share * 100:.0f} % of the time{hot}"
    return f"{share * 100:.0f} % of the time{on} is spent blocked in OS calls ({', '.join(ev.blocking_calls[:2])})"
