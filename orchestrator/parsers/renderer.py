"""Which GPU a run's graphics ran on: the GL_RENDERER an app printed (es2gears, glmark2, glxinfo, posebench
--delegate gl), else the GPU a Jetson's chip carries. A software renderer (Mesa's llvmpipe, softpipe,
lavapipe, SwiftShader) is a "GPU" whose work runs on the CPU. Pure."""
from __future__ import annotations

import re

# "GL_RENDERER   = llvmpipe (...)" (es2gears), "GL_RENDERER:   Mali-G78" (glmark2, posebench),
# "OpenGL renderer string: llvmpipe (...)" (glxinfo), "OpenGL ES renderer string: ..." (es2_info)
RENDERER_LINE = re.compile(r"^\s*(?:GL_RENDERER\s*[:=]|OpenGL(?: ES)? renderer string:)\s*(\S.*?)\s*$")
SOFTWARE_RENDERER = re.compile(r"\b(llvmpipe|softpipe|lavapipe|swiftshader|swrast|software rasterizer)\b", re.I)

# the GPU of each Jetson chip (the device tree's "nvidia,tegraNNN"): its architecture and nvgpu's name for it
JETSON_GPUS = {
    "tegra210": "Maxwell GPU (gm20b)",   # Jetson Nano, TX1
    "tegra186": "Pascal GPU (gp10b)",    # Jetson TX2
    "tegra194": "Volta GPU (gv11b)",     # Jetson Xavier NX, AGX Xavier
    "tegra234": "Ampere GPU (ga10b)",    # Jetson Orin Nano, Orin NX, AGX Orin
}


def gl_renderer(text: str) -> str | None:
    """The first renderer an app's output names, or None."""
    for line in text.splitlines():
        match = RENDERER_LINE.match(line)
        if match:
            return match.group(1)
    return None


def board_gpu(chip: str | None) -> str | None:
    """'tegra234' -> 'Ampere GPU (ga10b)'; None for a chip this does not know or no chip."""
    return JETSON_GPUS.get(chip or "")


def is_software(renderer: str | None) -> bool:
    return bool(renderer and SOFTWARE_RENDERER.search(renderer))
