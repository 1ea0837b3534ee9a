"""glmark2: one "[scene] options: FPS: N FrameTime: T ms" line per scene, then "glmark2 Score: S" (the mean of
the scenes' FPS). Scenes keep their options in the figure name ("<default>" is none); an "inf ms" frame time
stays infinite (the scene drew no frame in its time). glmark2 crashing before its score ("Segmentation fault",
"Aborted", a failed assertion, shader "Error:" lines) is a failure, said with the crash's line and how many
scenes ran; output that just stops (the run ended first) is not."""
from __future__ import annotations

import re

from .common import Figure, Parsed, number

SCENE = re.compile(r"^\s*\[([\w-]+)\]\s*(.*?):\s*FPS:\s*(\d+)\s+FrameTime:\s*([\d.]+|inf|nan)\s*ms", re.I)
SCORE = re.compile(r"glmark2 Score:\s*(\d+)")
VERSION = re.compile(r"^\s*glmark2 (\d{4}\.\d{2})\s*$")
RENDERER = re.compile(r"^\s*GL_RENDERER:\s*(.+?)\s*$")
CRASH = re.compile(r"Segmentation fault|Aborted|Assertion .* failed|^Error:|Bus error|Illegal instruction", re.I)


def parse_glmark2(text: str) -> Parsed:
    figures: dict[str, Figure] = {}
    details: dict[str, str] = {}
    scenes = 0
    crash = None
    for line in text.splitlines():
        if crash is None and CRASH.search(line.strip()):
            crash = line.strip()
        scene = SCENE.match(line)
        if scene:
            options = scene.group(2) if scene.group(2) not in ("", "<default>") else None
            name = f"{scene.group(1)}[{options}]" if options else scene.group(1)
            figures[f"{name}_fps"] = Figure(float(scene.group(3)), "frames/s")
            figures[f"{name}_frame_ms"] = Figure(number(scene.group(4)), "ms")
            scenes += 1
            continue
        score = SCORE.search(line)
        if score:
            figures["score"] = Figure(float(score.group(1)), "points")
        for pattern, key in ((VERSION, "version"), (RENDERER, "renderer")):
            match = pattern.match(line)
            if match:
                details[key] = match.group(1)
    if scenes:
        figures["scenes"] = Figure(float(scenes), "scenes")
    failure = None
    if crash is not None and "score" not in figures:
        failure = f"glmark2 crashed after {scenes} scenes, before its score: {crash}"
    return Parsed("glmark2", figures, failure, details)
