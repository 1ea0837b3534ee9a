"""summary.json's "attribution": the focus thread's time over the analysis window, and in each frame inside it,
split by what the thread waits for (attribution.py), with what each share is made of (the calls, the calls they
happen inside, the threads) and how sure the split is (which of its sources the capture has)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...documents.attribution import Attribution, AttributionFrames, AttributionSources, Share
from ...documents.shares import SHARE_TITLES
from ...documents.summary_sections import WhereFrame
from ...parsers.renderer import is_software
from ..export.names import tid_of
from ..export.sampling import Samples
from ..intervals.attribution import CPU, GPU, SHARES, THREADS, Spans, Split
from ..intervals.coverage import Coverage
from .frames import Frames
from .stories import frame_stories
from .thread_calls import Calls
from .thread_time import Gathered
from .verdict import CLOSE_RATIO
from .where import where

TOP_NAMES = 3
# the confidence falls to medium past this much unexplained time, to low past the second
UNEXPLAINED_MEDIUM, UNEXPLAINED_LOW = 0.10, 0.25
# the largest share leads the next by at least this much for high confidence; and when the second share weighs at
# least CLOSE_RATIO of the first (verdict.py), two causes weigh about the same: no cause is clear (low)
CLEAR_LEAD = 0.10
NAMED_SHARE = 0.01  # a call the thread ran inside is named when it holds this much of the window

MISSING = {
    "os_runtime": "no OS runtime trace: what the thread blocked in is not recorded",
    "context_switches": "no context switches: when the thread ran is estimated (outside its blocking calls, and "
                        "where its CPU samples fall)",
    "context_switches_sampled": "no context switches: when the thread ran is estimated from where its CPU samples "
                                "fall",
    "context_switches_unsampled": "no context switches and no CPU samples: when the thread ran is not recorded",
    "gpu_work": "no GPU work recorded: waits in GPU calls cannot be set against the GPU's busy time",
}


def ranked(names: tuple[str, ...] | list[str], amounts: np.ndarray, top: int = TOP_NAMES) -> list[str]:
    """The names by the amount each carries (amounts[i] is names[i]'s), largest first, those with none left out."""
    order = np.argsort(-amounts, kind="stable")[:top]
    return [names[i] for i in order if amounts[i] > 0]


def _thread_label(gtid: int, names: dict[int, str]) -> str:
    return f"{names.get(gtid, 'thread')} ({tid_of(gtid)})"


def _hot_functions(samples: Samples | None, gtid: int) -> list[str]:
    """The thread's hottest functions by their own samples."""
    if samples is None:
        return []
    mine = np.isin(samples.chain_ids, samples.ids[samples.tids == gtid]) & (samples.depths == 0)
    counts = np.bincount(samples.symbols[mine], minlength=len(samples.names)).astype(np.float64)
    return ranked(samples.names, counts)


@dataclass(frozen=True)
class Made:
    """What each share is made of, per call name (columns in SHARES' order)."""
    os: np.ndarray        # (OS call names, shares)
    api: np.ndarray       # (GPU and window-system call names, shares)
    wakers: np.ndarray    # (waking threads, shares)
    waker_tids: np.ndarray
    beside: list[str]     # the process's threads on a CPU while the thread waited for a software renderer
    api_own_cpu: np.ndarray  # per GPU or window-system call name: running inside it, outside its OS calls


def made_of(split: Split, gathered: Gathered, names: dict[int, str]) -> Made:
    os_calls, api = gathered.os_calls, gathered.api_calls
    tids, code = np.unique(gathered.wakers, return_inverse=True)
    by_name, by_waker = split.by_code(os_calls.starts, os_calls.ends, (os_calls.codes, len(os_calls.names)),
                                      (code, len(tids)))
    [by_api] = split.by_code(api.starts, api.ends, (api.codes, len(api.names)))
    [nested] = split.by_code(os_calls.starts, os_calls.ends, (_made_in(os_calls, api), len(api.names) + 1))
    ran = {tid: float(split.by_code(spans.starts, spans.ends, (np.zeros(len(spans), dtype=np.int64), 1))[0][0, GPU])
           for tid, spans in gathered.beside.items()}
    return Made(by_name, by_api, by_waker, tids, [f"{_thread_label(tid, names)}" for tid in
                                                  sorted(ran, key=lambda t: -ran[t])[:TOP_NAMES] if ran[tid] > 0],
                by_api[:, CPU] - nested[:-1, CPU])


def _made_in(os_calls: Calls, api: Calls) -> np.ndarray:
    """Per OS call, the name code of the GPU or window-system call it was made in (len(api.names): none)."""
    ordered = api.taken(np.argsort(api.starts, kind="stable"))
    at = ordered.made_in(os_calls.starts)
    return np.where(at >= 0, ordered.codes[np.maximum(at, 0)] if len(at) and len(ordered.codes) else 0,
                    len(api.names))


def _what_of(made: Made, gathered: Gathered, share: int, names: dict[int, str], samples: Samples | None,
             gtid: int, floor_ns: float) -> tuple[list[str], list[str], list[str]]:
    """What the share is made of: its calls, the GPU or window-system calls they happen inside, its threads; the
    calls a thread ran inside when at least floor_ns of it."""
    os_names, api_names = gathered.os_calls.names, gathered.api_calls.names
    if share == CPU:  # the functions it ran, and the calls it ran inside: an OS call's copy, a GL call's own work
        if gathered.time.on_cpu_estimated:  # a sample stands for time before it, which may lie in the call before
            return _hot_functions(samples, gtid), [], []

        ran = np.r_[made.os[:, CPU], made.api_own_cpu]  # an OS call's copy, a GL call's own work outside them
        return _hot_functions(samples, gtid), ranked(tuple(os_names) + tuple(api_names),
                                                     np.where(ran >= floor_ns, ran, 0.0)), []
    if share == GPU:
        return ranked(api_names, made.api[:, GPU]), [], made.beside or list(gathered.renderer_threads)
    threads: list[str] = []
    if share == THREADS:
        woke = made.waker_tids > 0
        labels = [_thread_label(int(t), names) for t in made.waker_tids[woke]]
        threads = ranked(labels, made.wakers[woke, THREADS])
    return ranked(os_names, made.os[:, share]), ranked(api_names, made.api[:, share]), threads


def _recorded_share(split: Split, recorded: Spans, gpu_ns: float) -> float | None:
    """How much of the GPU share the GPU's recorded work covers (the rest: a software renderer's threads)."""
    if gpu_ns <= 0:
        return None
    if not len(recorded):
        return 0.0
    lows, highs = Coverage(recorded.starts, recorded.ends).pieces()
    [covered] = split.by_code(lows, highs, (np.zeros(len(lows), dtype=np.int64), 1))
    return float(covered[0, GPU]) / gpu_ns


def sources_of(gathered: Gathered) -> AttributionSources:
    time = gathered.time
    return AttributionSources(os_runtime=time.calls_traced,
                              context_switches=time.on_cpu is not None and not time.on_cpu_estimated,
                              gpu_work=bool(len(gathered.recorded_gpu)), gpu_traced=gathered.gpu_traced,
                              samples=gathered.sampled,
                              software_renderer=list(gathered.renderer_threads), display=gathered.has_display)


def confidence_of(pcts: dict[str, float], sources: AttributionSources, uses_gpu: bool) -> tuple[str, list[str]]:
    """high, medium or low, and what lowers it: missing sources, time nothing explains, a close second share (low
    when the second weighs CLOSE_RATIO of the first or more)."""
    missing = [MISSING[key] for key, found in (("os_runtime", sources.os_runtime),
                                                ("context_switches" if sources.os_runtime
                                                 else "context_switches_sampled" if sources.samples
                                                 else "context_switches_unsampled", sources.context_switches))
               if not found]
    if uses_gpu and not sources.gpu_work and not sources.software_renderer:
        missing.append(MISSING["gpu_work"])
    level = 2 - len([m for m in missing if m != MISSING["gpu_work"]])
    unexplained = pcts["unexplained"] / 100.0
    if unexplained >= UNEXPLAINED_LOW:
        level = 0
    elif unexplained >= UNEXPLAINED_MEDIUM:
        level = min(level, 1)
    first, second = sorted(pcts.values(), reverse=True)[:2]
    if first > 0 and second >= CLOSE_RATIO * first:
        level = 0
    elif (first - second) / 100.0 < CLEAR_LEAD:
        level = min(level, 1)
    return ("low", "medium", "high")[max(level, 0)], missing


def attribution_section(split: Split, gathered: Gathered, gtid: int, names: dict[int, str], frames: Frames | None,
                        samples: Samples | None, renderer: str | None,
                        told: dict[int, list[str]] | None = None) -> Attribution:
    """The section: the shares of the window (the part of it the thread lived in) and of each frame inside it,
    named and weighed; and the stories of the frames ``told`` names and of each share's heaviest frame."""
    span, sample = gathered.life, gathered.sample
    rows = split.totals(sample.starts, sample.ends)  # the frames read, else the window (or its slices read)
    total, window_ns = rows.sum(axis=0), int((sample.ends - sample.starts).sum())
    inside = sample.frames if sample.frames is not None else np.empty(0, dtype=np.int64)
    per_frame = rows if sample.frames is not None else np.zeros((0, len(SHARES)))
    made = made_of(split, gathered, names)
    shares: dict[str, Share] = {}
    for k, name in enumerate(SHARES):
        heaviest: list[WhereFrame] = []
        own: list[int] = []
        if frames is not None:
            full = np.zeros(len(frames.starts), dtype=np.int64)
            full[inside] = np.rint(per_frame[:, k]).astype(np.int64)
            heaviest = [WhereFrame.from_wire(frame) for frame in where(span, frames, full).to_json()["frames"]]
            own = [int(v) for v in full[inside]] if total[k] > 0 else []
        calls, within, threads = _what_of(made, gathered, k, names, samples, gtid, NAMED_SHARE * window_ns)
        shares[name] = Share(ns=int(round(total[k])), pct=float(total[k] * 100.0 / window_ns) if window_ns else 0.0,
                             per_frame_ns=own, frames=heaviest, calls=calls, inside=within, threads=threads)
    sources = sources_of(gathered)
    confidence, missing = confidence_of({name: share.pct for name, share in shares.items()}, sources,
                                        uses_gpu=bool(len(gathered.api_calls.starts)))
    stories = []
    if frames is not None:
        told = {index: list(why) for index, why in (told or {}).items()}
        for name in SHARES:
            if shares[name].pct >= 1.0 and shares[name].frames:
                told.setdefault(shares[name].frames[0].index, []).append(
                    f"the heaviest {frames.unit} of the share '{SHARE_TITLES[name]}'")
        stories = frame_stories(split, gathered.os_calls, gathered.api_calls, frames, told)
    return Attribution(
        thread=_thread_label(gtid, names), start_ns=span[0], end_ns=span[1], window_ns=window_ns,
        frames=AttributionFrames(int(inside[0]), int(len(inside)), sample.every,
                                 frames.unit if frames is not None else "frame") if len(inside) else None,
        sampled_every=sample.every, shares=shares,
        largest=max(SHARES, key=lambda n: (shares[n].ns, -SHARES.index(n))),
        on_cpu_ns=int(round(split.on_cpu(sample.starts, sample.ends).sum())) if gathered.time.on_cpu is not None
        else None,
        gpu_recorded=_recorded_share(split, gathered.recorded_gpu, float(total[GPU])),
        software_renderer=is_software(renderer) or bool(gathered.renderer_threads),
        wait_function_samples=gathered.wait_samples, sources=sources, missing=missing, confidence=confidence,
        stories=stories)
