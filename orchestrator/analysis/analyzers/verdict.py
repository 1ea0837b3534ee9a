"""The verdict: the largest share of the focus thread's time (shares.py), in words a user acts on, never
against its own evidence.

- The kind is the largest share's: cpu_bound, gpu_wait (gpu_bound when the GPU's recorded work also covers
  >= 85 % of the window), software_renderer (the "GPU" a thread waits for is a software renderer: the CPU),
  display_wait, thread_wait, io_wait, sleep, or unexplained; vsync when the frames are paced by a display's refresh
  (pacing.py), the largest share is a wait in a buffer swap (on the display or the GPU), the GPU's recorded work
  does not cover 85 % of the window and the app's environment does not turn vsync off. Only then is vsync named:
  a swap that blocks is no proof of it.
- A software renderer is said to be the CPU, and the verdict says the figures do not represent the board's GPU.
- A trace asked for that recorded nothing (content.py) leads the summary, and the confidence is low.
- Confidence: the split's own (shares.py: its sources, unexplained time, how clear the lead is).

Each evidence line comes again in ``findings`` with where it happens: the window and the frames carrying most
of it, for the page to mark and for --json users to jump to.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...documents.attribution import Attribution, Share
from ...documents.shares import SHARE_KINDS, SHARES
from ..export.calls import SWAP_CALLS
from .pacing import Pacing
from .where import Where

GPU_BUSY_SHARE = 0.85
CLOSE_RATIO = 0.8  # the second share weighs this much of the first or more: two causes, neither alone (low)
NAMED_PCT = 1.0  # shares under 1 % of the window are left out of the words
KINDS = {kind.name: kind.verdict for kind in SHARE_KINDS}
SHARE_WORDS = {kind.name: kind.verdict_words for kind in SHARE_KINDS}


@dataclass(frozen=True)
class Context:
    """What the verdict weighs beside the shares."""
    window: tuple[int, int]
    frame_count: int = 0                        # frames inside the window
    gpu_busy_pct: float | None = None           # the GPU's recorded work over the window
    gpu_busy_ns: int | None = None              # the same in ns
    gpu_work_names: tuple[str, ...] = ()        # what it ran, most GPU time first
    renderer: str | None = None                 # the app's GL_RENDERER, else the board's GPU
    busy_cores: float | None = None
    hottest_self: str | None = None
    hottest_self_pct: float | None = None
    hottest_where: Where | None = None
    pacing: Pacing | None = None                # the display's refresh pacing the steady frames (None with vsync off)
    gaps: list[dict] = field(default_factory=list)  # traces asked for that recorded nothing
    readbacks: tuple[str, tuple[str, ...]] | None = None  # stalling readbacks: their words and calls (readbacks.py)


def _ms(ns: float) -> str:
    """A duration in the unit that reads best: 0.45 ms, 12.3 ms, 10.3 s."""
    if ns >= 1e9:
        return f"{ns / 1e9:.3g} s"
    return f"{ns / 1e6:.3g} ms" if ns >= 1e4 else f"{ns / 1e3:.3g} us"


def _list(names: list[str] | tuple[str, ...], count: int = 3) -> str:
    return ", ".join(list(names)[:count])


def _renderer_words(found: Attribution, context: Context) -> str:
    """'llvmpipe (LLVM 15.0.6, 256 bits), a software renderer: its work runs on the CPU (llvmpipe-0, llvmpipe-1),
    so these figures do not represent the board's GPU'"""
    threads = found.software_threads
    on = f" ({_list(threads, 4)})" if threads else ""
    name = f"{context.renderer}, a software renderer" if context.renderer else "a software renderer"
    return f"{name}: its work runs on the CPU{on}, so these figures do not represent the board's GPU"


def _share_detail(name: str, share: Share, found: Attribution, context: Context) -> str:
    """What a share is made of, in words."""
    calls, inside, threads = share.calls, share.inside, share.threads
    within = f" inside {_list(inside, 2)}" if inside else ""
    in_calls = f" in {_list(calls)}" if calls else ""
    if name == "cpu":
        waiting = (f"; {found.wait_function_samples} of its samples are in a function that waits for the GPU"
                   if found.wait_function_samples else "")
        ran_in = f", some of it inside {_list(inside, 3)}" if inside else ""
        return ran_in + (f", mostly in {_list(calls)}" if calls else "") + waiting
    if name == "gpu":
        work = f" {_list(context.gpu_work_names, 2)}" if context.gpu_work_names else " its work"
        if found.software_renderer:
            return f"{in_calls} while {_list(threads, 4) or 'its threads'} ran{work} on the CPU"
        if found.sources.gpu_traced is False:
            return f"{in_calls} (what the GPU ran is not recorded)"
        on = f" on {context.renderer}" if context.renderer else ""
        return f"{in_calls} while the GPU ran{work}{on}"
    if name == "threads":
        woke = f", woken by {_list(threads, 2)}" if threads else ""
        return f"{in_calls}{within}{woke}"
    if name == "unexplained":
        sources = found.sources
        if sources.context_switches:
            return (" (off a CPU outside any blocking call: waiting for a CPU, or blocked in a call nsys did not "
                    "trace)")
        if sources.samples:
            return (" (no CPU sample there and no blocking call: waiting for a CPU, or blocked in a call nsys did "
                    "not trace)")
        return " (nothing recorded says whether the thread ran or waited)"
    return f"{in_calls}{within}"


def ordinal(n: int) -> str:
    """2 -> '2nd', 11 -> '11th', 23 -> '23rd'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _amount(share: Share, found: Attribution) -> str:
    """'53 % (0.45 ms of each 0.848 ms frame)', or of the window the thread lived in; of the frames (slices) read
    when it read every k-th."""
    unit = found.unit if found.frame_count else "slice"
    read = f", every {ordinal(found.sampled_every)} {unit} read" if found.sampled_every > 1 else ""
    if found.frame_count:
        return (f"{share.pct:.0f} % ({_ms(share.ns / found.frame_count)} of each "
                f"{_ms(found.window_ns / found.frame_count)} {unit}{read})")
    return f"{share.pct:.0f} % ({_ms(share.ns)} of {_ms(found.window_ns)}{read})"


def _kind(largest: str, found: Attribution, context: Context) -> str:
    share = found.share(largest)
    in_swaps = set(share.inside + share.calls) & set(SWAP_CALLS)
    gpu_sets_pace = (context.gpu_busy_pct or 0.0) >= GPU_BUSY_SHARE * 100
    if context.pacing is not None and largest in ("display", "gpu") and in_swaps and not gpu_sets_pace:
        return "vsync"
    if largest == "gpu" and found.software_renderer:
        return "software_renderer"
    if largest == "gpu" and (context.gpu_busy_pct or 0.0) >= GPU_BUSY_SHARE * 100:
        return "gpu_bound"
    return KINDS[largest]


def _share_label(name: str, found: Attribution) -> str:
    if name == "gpu" and found.software_renderer:
        return "waiting for the software renderer"
    if name == "gpu" and found.sources.gpu_traced is False:
        return "waiting for the GPU (not traced)"
    return SHARE_WORDS[name]


def decide(found: Attribution | None, context: Context) -> dict:
    findings: list[dict] = []
    thread = found.thread if found else None

    def add(text: str, kind: str, at: Where | dict | None = None, names: tuple[str, ...] | list[str] = ()) -> None:
        place = at if isinstance(at, dict) else (at or Where(*context.window)).to_json()
        findings.append({"text": text, "kind": kind, **place, "names": list(names),
                         "thread": thread if names else None})

    for gap in context.gaps:
        add(f"{gap['what']}: {gap['why']}", "empty_trace")
    ordered = sorted(SHARES, key=lambda n: -found.share(n).ns) if found else []
    for name in ordered:
        assert found is not None
        share = found.share(name)
        if share.pct < NAMED_PCT:
            continue
        add(f"{_share_label(name, found)}: {_amount(share, found)}{_share_detail(name, share, found, context)}",
            f"share_{name}", {"start_ns": found.start_ns, "end_ns": found.end_ns,
                             "frames": [frame.as_json() for frame in share.frames]},
            share.calls + share.inside if name != "cpu" else share.inside)  # cpu's calls are functions
    if found is not None:
        first, second = (found.share(name) for name in ordered[:2])
        if first.pct > 0 and second.pct >= CLOSE_RATIO * first.pct:
            add(f"two causes weigh about the same, {_share_label(ordered[0], found)} {first.pct:.0f} % and "
                f"{_share_label(ordered[1], found)} {second.pct:.0f} %: neither is the cause alone (low confidence)",
                "close_shares")
    if found is not None and found.software_renderer:
        add(f"the renderer is {_renderer_words(found, context)}", "renderer")
    if context.gpu_busy_pct is not None:
        work = f" ({_list(context.gpu_work_names)})" if context.gpu_work_names else ""
        add(f"GPU work recorded by nsys{work} covers {context.gpu_busy_pct:.0f} % of the window", "gpu_busy", None,
            context.gpu_work_names[:3])
    if context.readbacks is not None:
        add(context.readbacks[0], "readbacks", None, context.readbacks[1])
    if context.pacing is not None:
        add(context.pacing.words(), "vsync")
    if context.busy_cores is not None:
        add(f"{context.busy_cores:.2g} cores busy on average", "cores")
    if context.hottest_self:
        add(f"hottest function: {context.hottest_self} ({context.hottest_self_pct:.0f} % of samples)",
            "hottest_function", context.hottest_where)
    for line in found.missing if found else []:
        add(line, "missing_source")
    evidence = [finding["text"] for finding in findings]
    lead = "".join(f"{gap['what']}: {gap['why']}. " for gap in context.gaps)
    if found is None or found.share(ordered[0]).ns <= 0:
        return {"kind": "unexplained", "confidence": "low", "share": None,
                "summary": lead + "no thread of the app to attribute time to", "evidence": evidence,
                "findings": findings, "gaps": context.gaps}
    largest = ordered[0]
    kind = _kind(largest, found, context)
    share = found.share(largest)
    text = (f"{_amount(share, found)} on {found.thread} is spent {_share_label(largest, found)}"
            f"{_share_detail(largest, share, found, context)}")
    if kind == "vsync" and context.pacing is not None:
        text += f": {context.pacing.words()}"
    if found.software_renderer:
        text += f"; the renderer is {_renderer_words(found, context)}"
    return {"kind": kind, "confidence": "low" if context.gaps else found.confidence, "share": largest,
            "summary": lead + text, "evidence": evidence, "findings": findings, "gaps": context.gaps}
