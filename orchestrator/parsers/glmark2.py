"""glmark2: one "[scene] options: FPS: N FrameTime: T ms" line per scene, then "glmark2 Score: S" (the
mean of the scenes' FPS). Scenes keep their options in the figure name; an "inf ms" frame time stays
infinite (the scene drew no frame in its time)."""
from __future__ import annotations

import re

from .common import Figure, Parsed, number

SCENE = re.compile(r"^\s*\[([\w-]+)\]\s*(.*?):\s*FPS:\s*(\d+)\s+FrameTime:\s*([\d.]+|inf|nan)\s*ms", re.I)
SCORE = re.compile(r"glmark2 Score:\s*(\d+)")
VERSION = re.compile(r"^\s*glmark2 (\d{4}\.\d{2})\s*$")
RENDERER = re.compile(r"^\s*GL_RENDERER:\s*(.+?)\s*$")


def parse_glmark2(text: str) -> Parsed:
    figures: dict[str, Figure] = {}
    details: dict[str, str] = {}
    scenes = 0
    for line in text.splitlines():
        scene = SCENE.match(line)
        if scene:
            name = f"{scene.group(1)}[{scene.group(2)}]" if scene.group(2) else scene.group(1)
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
    return Parsed("glmark2", figures, None, details)
