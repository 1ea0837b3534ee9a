"""The shares of a thread's time, declared once: each one's name (its key in summary.json, its study and compare
metric's stem), its words, the verdict it gives when it is the largest, and its colours on the pages. The order is
the rules' order (a tie goes to the share declared first) and the order the pages stack them in. Adding a share is
one entry here (and the rule in analysis/intervals/attribution.py that gives it time). The verdicts that are no
share's (the GPU bound, vsync, the software renderer, and two of older runs) are declared beside them."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ShareKind:
    name: str
    title: str              # what the thread is doing, in a share table ("running on a CPU")
    title_of_runs: str      # the same in tables of several runs, which may have a GPU or a software renderer
    verdict: str            # the verdict's kind when this share is the largest
    verdict_words: str      # the verdict's words for it
    verdict_title: str      # the verdict as the page's headline says it
    colour: str             # on the pages (CSS)
    verdict_colour: str | None  # the headline's colour (None: the text's own)


SHARE_KINDS = (
    ShareKind("cpu", "running on a CPU", "running on a CPU", "cpu_bound", "running on a CPU", "CPU-bound",
              "#c9475a", "#c9475a"),
    ShareKind("gpu", "waiting for the GPU", "waiting for the GPU (or a software renderer)", "gpu_wait",
              "waiting for the GPU", "waits for the GPU", "#2f6fde", "#2f6fde"),
    ShareKind("display", "waiting on the display server", "waiting on the display server", "display_wait",
              "waiting on the display server", "waits on the display server", "#8e5bd6", "#8e5bd6"),
    ShareKind("threads", "waiting on other threads", "waiting on other threads", "thread_wait",
              "waiting on the app's other threads", "waits on other threads", "#d98c2b", "#8e5bd6"),
    ShareKind("io", "I/O and other blocking calls", "I/O and other blocking calls", "io_wait",
              "in I/O and other blocking calls", "waits on I/O", "#17a2b8", "#d98c2b"),
    ShareKind("sleep", "sleeping", "sleeping", "sleep", "sleeping", "sleeps", "#9aa3b2", "#d98c2b"),
    ShareKind("unexplained", "unexplained (nothing recorded says why)",
              "unexplained (nothing recorded says why)", "unexplained", "in time nothing recorded explains",
              "waits nothing traced explains", "#d6d9de", None),
)
SHARES = tuple(kind.name for kind in SHARE_KINDS)
SHARE_TITLES = {kind.name: kind.title for kind in SHARE_KINDS}
SHARE_TITLES_OF_RUNS = {kind.name: kind.title_of_runs for kind in SHARE_KINDS}


@dataclass(frozen=True)
class VerdictKind:
    kind: str               # summary.json's verdict kind
    title: str              # the verdict as the page's headline says it
    colour: str | None      # the headline's colour (None: the text's own)


VERDICT_KINDS = (
    *(VerdictKind(kind.verdict, kind.verdict_title, kind.verdict_colour) for kind in SHARE_KINDS),
    VerdictKind("gpu_bound", "GPU-bound", "#2f6fde"),
    VerdictKind("vsync", "paced by vsync", "#8e5bd6"),
    VerdictKind("software_renderer", "waits for the software renderer (the CPU)", "#c9475a"),
    VerdictKind("io_or_sleep", "waits on I/O or sleeps", "#d98c2b"),    # older runs'
    VerdictKind("unknown", "no clear bottleneck", None),               # older runs'
)
VERDICT_TITLES = {verdict.kind: verdict.title for verdict in VERDICT_KINDS}
