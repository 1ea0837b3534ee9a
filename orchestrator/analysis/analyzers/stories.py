"""Each frame's own story: for the frames the page and the verdict name (the slowest steady frame, the one closest
to the median, the heaviest of each share), where the focus thread's time went in that frame alone and its
longest calls, from the same split as the shares (attribution.py): a frame's figures are never the run's
averages."""
from __future__ import annotations

import numpy as np

from ...documents.attribution import FrameStory, StoryCall
from ...documents.shares import SHARES
from ..intervals.attribution import Split
from .frames import Frames
from .thread_calls import Calls
from .timeline import representative_frame

LONGEST_CALLS = 4
CALL_SHARE = 0.05  # a call is told when it holds this much of its frame (the longest one always)


def _clipped(calls: Calls, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The calls overlapping [lo, hi), by index, and their time inside it."""
    inside = np.flatnonzero((calls.starts < hi) & (calls.ends > lo))
    return inside, np.minimum(calls.ends[inside], hi) - np.maximum(calls.starts[inside], lo)


def longest_calls(os_calls: Calls, api_calls: Calls, lo: int, hi: int) -> list[StoryCall]:
    """The frame's longest calls: OS calls with the GPU or window-system call each was made in, and those calls'
    own time outside them."""
    os_in, os_ns = _clipped(os_calls, lo, hi)
    api_in, api_ns = _clipped(api_calls, lo, hi)
    order = np.argsort(api_calls.starts[api_in], kind="stable")
    api_in, api_ns = api_in[order], api_ns[order]
    made_in = api_calls.taken(api_in).made_in(os_calls.starts[os_in])
    own = api_ns - np.bincount(made_in[made_in >= 0], weights=os_ns[made_in >= 0], minlength=len(api_in))
    found = [StoryCall(name=os_calls.names[os_calls.codes[i]], start_ns=int(os_calls.starts[i]), ns=int(ns),
                       inside=api_calls.names[api_calls.codes[api_in[k]]] if k >= 0 else None)
             for i, ns, k in zip(os_in, os_ns, made_in)]
    found += [StoryCall(name=api_calls.names[api_calls.codes[i]], start_ns=int(api_calls.starts[i]), ns=int(ns))
              for i, ns in zip(api_in, own) if ns > 0]
    found.sort(key=lambda call: (-call.ns, call.start_ns))
    return [call for k, call in enumerate(found[:LONGEST_CALLS]) if k == 0 or call.ns >= CALL_SHARE * (hi - lo)]


def told_frames(frames: Frames | None, p50_ns: float | None, incomplete: list[int]) -> dict[int, list[str]]:
    """The frames the page shows whole: the slowest steady frame and the steady frame closest to the median (as
    the page picks them), by index, with why."""
    if frames is None or len(frames.starts) < 2 or p50_ns is None:
        return {}
    durations, first = frames.durations, frames.steady_first
    slowest = first + int(np.argmax(durations[first:]))
    told = {slowest: [f"the slowest steady {frames.unit}"]}
    told.setdefault(representative_frame(durations.tolist(), first, p50_ns, incomplete), []).append(
        f"the steady {frames.unit} closest to the median")
    return told


def frame_stories(split: Split, os_calls: Calls, api_calls: Calls, frames: Frames,
                  told: dict[int, list[str]]) -> list[FrameStory]:
    """The stories of the frames ``told`` names (index -> why), those the split read whole, by index."""
    bounds = split.bounds
    stories = []
    for index in sorted(told):
        if not 0 <= index < len(frames.starts):
            continue
        lo, hi = frames.span(index)
        at = np.searchsorted(bounds, [lo, hi])
        if at[0] >= len(bounds) or at[1] >= len(bounds) or bounds[at[0]] != lo or bounds[at[1]] != hi:
            continue  # not read: its calls may be missing
        [row] = split.totals([lo], [hi])
        stories.append(FrameStory(index=index, start_ns=lo, end_ns=hi, told=told[index],
                                  shares={name: int(round(row[k])) for k, name in enumerate(SHARES)},
                                  calls=longest_calls(os_calls, api_calls, lo, hi)))
    return stories
