"""Which GPU a run used, from what its app printed or its board's chip."""
from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.figures.renderer import run_renderer
from orchestrator.parsers.renderer import board_gpu, gl_renderer, is_software
from remote_agent.messages import Facts

PARSERS = Path(__file__).parent / "data" / "parsers"


@pytest.mark.parametrize("name, renderer, software", [
    ("glmark2-2021.02-softpipe.txt", "softpipe", True),
    ("glmark2-2021.02-gtx1080-shader-error-truncated.txt", "NVIDIA GeForce GTX 1080/PCIe/SSE2", False),
    ("glmark2-2023.01-pixel6pro-virgl-mali-g78-complete.txt", "virgl (Mali-G78)", False),
])
def test_published_glmark2_logs_name_their_renderer(name, renderer, software):
    said = gl_renderer((PARSERS / name).read_text())
    assert said == renderer and is_software(said) is software


@pytest.mark.parametrize("line, renderer", [
    ("GL_RENDERER   = llvmpipe (LLVM 15.0.6, 256 bits)", "llvmpipe (LLVM 15.0.6, 256 bits)"),  # es2gears
    ("GL_RENDERER: NVIDIA Tegra Orin (nvgpu)/integrated", "NVIDIA Tegra Orin (nvgpu)/integrated"),  # posebench
    ("OpenGL renderer string: llvmpipe (LLVM 15.0.6, 256 bits)", "llvmpipe (LLVM 15.0.6, 256 bits)"),  # glxinfo
    ("OpenGL ES renderer string: Mali-G78", "Mali-G78"),  # es2_info
    ("GL_RENDERER:", None), ("renderer: llvmpipe", None),
])
def test_renderer_lines(line, renderer):
    assert gl_renderer(f"start\n{line}\nmore\n") == renderer


def test_a_run_folder_names_the_apps_renderer_else_its_boards_gpu(tmp_path):
    orin = Facts.from_wire({"board": {"model": "Jetson AGX Orin", "chip": "tegra234"}})
    assert run_renderer(tmp_path, orin) == "Ampere GPU (ga10b)"  # no app output: the chip's GPU
    (tmp_path / "app.stdout.log").write_text("frame 1\n")
    (tmp_path / "app.stderr.log").write_text("GL_RENDERER: NVIDIA Tegra Orin (nvgpu)/integrated\n")
    assert run_renderer(tmp_path, orin) == "NVIDIA Tegra Orin (nvgpu)/integrated"
    (tmp_path / "app.stderr.log").write_text("")
    assert run_renderer(tmp_path, Facts.from_wire({"board": {"chip": "tegra999"}})) is None
    assert run_renderer(tmp_path, None) is None
    assert [board_gpu(c) for c in ("tegra210", "tegra186", "tegra194")] == [
        "Maxwell GPU (gm20b)", "Pascal GPU (gp10b)", "Volta GPU (gv11b)"]
