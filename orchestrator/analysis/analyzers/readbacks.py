"""Stalling readbacks: a thread that copies a few bytes back from the GPU synchronously, iteration after iteration
(instant-ngp's 937 four-byte device-to-pageable copies), stalls the host each time until the GPU's queue drains,
and the GPU idles while the host catches up. Named when the thread's synchronous copies to the host of at most
SMALL_BYTES number at least one per iteration (or MIN_COPIES without iterations) and add up to SHARE or more of its
time.
"""
from __future__ import annotations

import numpy as np

from ..export.calls import CUDA_WAIT_CALLS, plain_name
from ..export.names import string_values
from ..export.trace import Trace
from .api_summaries import MEMCPY_KINDS
from .frames import Frames
from .gpu_busy import PAGEABLE, of_process

SMALL_BYTES = 4096
TO_HOST = (2, 4, 12)  # copyKind: device to host, array to host, unified device to host
SHARE = 0.10
MIN_COPIES = 20
MEMORY = {0: "pageable", 1: "pinned", 2: "device", 3: "array", 4: "managed", 5: "device", 6: "managed"}
DIRECTIONS = {"HtoD": "host to device", "DtoH": "device to host", "DtoD": "device to device", "HtoH": "host to host"}


def stalling_readbacks(trace: Trace, gtid: int, span: tuple[int, int], frames: Frames | None) -> dict | None:
    """The thread's small synchronous copies over the span when they stall it: how many, their sizes and kind, the
    time they hold (ns, and a share of the span), per iteration; None when they do not."""
    calls = trace.calls_of_thread("CUPTI_ACTIVITY_KIND_RUNTIME", gtid, span)
    copies = trace.events("CUPTI_ACTIVITY_KIND_MEMCPY")
    if calls is None or copies is None or "corr" not in calls or "src" not in copies or not len(calls["start"]):
        return None
    copies = of_process(copies, gtid)  # correlationIds are counted per process
    back = (copies["bytes"] <= SMALL_BYTES) & np.isin(copies["kind"], TO_HOST)  # read back: to the host
    small = {key: values[back] for key, values in copies.items()}
    order = np.argsort(small["corr"], kind="stable")
    if not len(order):
        return None
    at = np.minimum(np.searchsorted(small["corr"][order], calls["corr"]), len(order) - 1)
    matched = (small["corr"][order][at] == calls["corr"]) & (calls["corr"] != 0)
    if not matched.any():
        return None
    picked = {key: values[order[at[matched]]] for key, values in small.items()}  # each matched call's copy
    names = string_values(trace.local_conn(), np.unique(calls["nameId"][matched]))
    named = np.array([plain_name(names.get(int(i), "")) in CUDA_WAIT_CALLS for i in calls["nameId"][matched]])
    synchronous = named | (picked["src"] == PAGEABLE) | (picked["dst"] == PAGEABLE)
    if not synchronous.any():
        return None
    starts = np.clip(calls["start"][matched][synchronous], *span)
    ends = np.clip(calls["end"][matched][synchronous], *span)
    held = int((ends - starts).sum())
    count = int(synchronous.sum())
    length = max(span[1] - span[0], 1)
    iterations = frames.count_within(span) if frames is not None else 0
    if held < SHARE * length or count < (iterations if iterations else MIN_COPIES):
        return None
    sizes = picked["bytes"][synchronous]
    kind = _most(picked["kind"][synchronous])
    memory = _most(picked["dst"][synchronous])
    direction = DIRECTIONS.get(MEMCPY_KINDS.get(kind, ""), MEMCPY_KINDS.get(kind, "?"))
    where_to = MEMORY.get(memory, "host")
    direction = direction.replace("host", where_to, 1) if "host" in direction else direction
    call_names = sorted({plain_name(names.get(int(i), "")) for i in calls["nameId"][matched][synchronous]})
    return {"copies": count, "bytes_min": int(sizes.min()), "bytes_max": int(sizes.max()), "direction": direction,
            "ns": held, "avg_ns": held / count, "pct": held * 100.0 / length, "iterations": iterations,
            "calls": call_names}


def _most(values: np.ndarray) -> int:
    kinds, counts = np.unique(values, return_counts=True)
    return int(kinds[np.argmax(counts)])


def readback_words(found: dict, thread: str) -> str:
    """'937 copies of 4 bytes, device to pageable, each stalling the host 3.1 ms on average: the GPU's queue drains
    each time (65 % of python (754028)'s time, 1 per iteration)'"""
    size = f"{found['bytes_max']:,} bytes" if found["bytes_min"] == found["bytes_max"] else \
        f"{found['bytes_min']:,} to {found['bytes_max']:,} bytes"
    per = f", {found['copies'] / found['iterations']:.3g} per iteration" if found["iterations"] else ""
    return (f"{found['copies']:,} copies of {size}, {found['direction']}, each stalling the host "
            f"{found['avg_ns'] / 1e6:.3g} ms on average: the GPU's queue drains each time ({found['pct']:.0f} % of "
            f"{thread}'s time{per}, in {', '.join(found['calls'])})")
