"""summary.json's "attribution": the focus thread's time split into shares by what it waits for, each share over
the window, frame by frame, and what it is made of."""
from __future__ import annotations

from typing import Any

from .record import Record
from .shares import SHARE_TITLES
from .summary_sections import WhereFrame


class AttributionFrames(Record):
    """The frames the attribution read: every k-th of the window's, from the first."""
    first: int | None = None
    count: int = 0
    every: int = 1
    unit: str = "frame"     # "frame", or "iteration" (a CUDA or TensorRT run's)


class AttributionSources(Record):
    """What the capture holds to split the time by (fewer sources: a less sure split)."""
    os_runtime: bool = False
    context_switches: bool = False
    gpu_work: bool = False
    gpu_traced: bool | None = None      # the export holds GPU work anywhere (None: a summary written before it)
    samples: bool = False
    software_renderer: list[str] = []   # the software renderer's named threads (llvmpipe-0...)
    display: bool = False


class Share(Record):
    """One share of the focus thread's time: over the window, per frame, and what it is made of. Lists are read item
    by item: an item of the wrong kind (a hand-edited file) reads as missing."""
    ns: int = 0
    pct: float = 0.0
    per_frame_ns: list[int] = []        # the frames inside the window, from Attribution's first
    frames: list[WhereFrame] = []       # the frames carrying most of it
    calls: list[str] = []               # its calls (the hottest functions for cpu), most time first
    inside: list[str] = []              # the GPU or window-system calls they were made in (for cpu: the OS calls,
    #                                     then the GPU calls, it ran inside)
    threads: list[str] = []             # the threads that woke it, or the software renderer's

    @classmethod
    def from_wire(cls, wire: Any, strict: bool = False) -> Share:
        """per_frame_ns is read whole or not at all: without an item of the wrong kind the frames after it would
        shift (it is kept as it was, as any value of the wrong kind)."""
        found: Share = super().from_wire(wire, strict)
        raw = wire.get("per_frame_ns") if isinstance(wire, dict) else None
        if isinstance(raw, list) and len(found.per_frame_ns) != len(raw):
            found.per_frame_ns = []
            found.extra["per_frame_ns"] = raw
            found.as_read.pop("per_frame_ns", None)
        return found


class StoryCall(Record):
    """One of a frame's longest calls on the focus thread: its time in the frame (a GPU or window-system call's
    own, outside the OS calls made inside it), and the call it was made in."""
    name: str = ""
    inside: str | None = None   # the GPU or window-system call it was made in
    start_ns: int = 0
    ns: int = 0


class FrameStory(Record):
    """One frame told on its own: where the focus thread's time went in it, and its longest calls."""
    index: int = 0
    start_ns: int = 0
    end_ns: int = 0
    told: list[str] = []        # why it is told: the slowest steady frame, the heaviest of a share...
    shares: dict[str, int] = {}  # ns per share (SHARES' order): they add up to the frame's time
    calls: list[StoryCall] = []  # the longest first

    @property
    def ns(self) -> int:
        return self.end_ns - self.start_ns


class Attribution(Record):
    """summary.json's "attribution": the focus thread's time split by what it waits for."""
    thread: str = ""
    start_ns: int = 0
    end_ns: int = 0
    window_ns: int = 0                      # the time attributed: the window, or the sample of it read
    frames: AttributionFrames | None = None  # the frames read (every k-th inside the window)
    sampled_every: int = 1                  # 1: all of the window; k: every k-th frame (or slice) of it
    shares: dict[str, Share] = {}       # by name, in SHARES' order
    largest: str = ""
    on_cpu_ns: int | None = None            # the thread on a CPU in the time attributed: running and spinning in
    #                                         calls that wait for the GPU (None: nothing says when it ran)
    gpu_recorded: float | None = None       # of the GPU share, what the GPU's recorded work covers
    software_renderer: bool = False
    wait_function_samples: int = 0
    sources: AttributionSources = AttributionSources()
    missing: list[str] = []             # the sources it lacks, in words
    confidence: str = "low"
    stories: list[FrameStory] = []          # frames told on their own (the slowest, the median, each share's
    #                                         heaviest), by index

    def story(self, index: int | None) -> FrameStory | None:
        return next((story for story in self.stories if story.index == index), None)

    def share(self, name: str) -> Share:
        return self.shares.get(name) or Share()

    @property
    def software_threads(self) -> list[str]:
        """The software renderer's named threads the capture holds (llvmpipe-0...)."""
        return self.sources.software_renderer

    @property
    def largest_share(self) -> Share:
        return self.share(self.largest)

    @property
    def unit(self) -> str:
        """What the frames read are: "frame", or "iteration" (a CUDA or TensorRT run's)."""
        return self.frames.unit if self.frames is not None else "frame"

    @property
    def on_cpu_pct(self) -> float | None:
        return None if self.on_cpu_ns is None or not self.window_ns else self.on_cpu_ns * 100.0 / self.window_ns

    @property
    def first_frame(self) -> int | None:
        return None if self.frames is None else self.frames.first

    @property
    def frame_count(self) -> int:
        return 0 if self.frames is None else self.frames.count

    def title(self, name: str) -> str:
        """The share's name in words; a software renderer's "GPU" is the CPU."""
        if name == "gpu" and self.software_renderer:
            return "waiting for the software renderer (the CPU)"
        if name == "gpu" and self.sources.gpu_traced is False:
            return "waiting for the GPU (not traced)"
        return SHARE_TITLES[name]

    def ms_per_frame(self, name: str) -> float | None:
        """The share's time in a frame of the window, on average; None without frames."""
        return self.share(name).ns / self.frame_count / 1e6 if self.frame_count else None
