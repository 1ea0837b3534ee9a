"""Pages from templates/: one Jinja environment, autoescape on, undefined names are errors.

A page is one self-contained file: its style and script are inline, and its Content-Security-Policy
forbids every request and every script but its own (by hash), so a name that looks like markup stays text.
"""
from __future__ import annotations

import base64
import hashlib
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from .. import __version__
from ..documents.shares import SHARE_KINDS, VERDICT_KINDS
from ..files import write_error, write_text


@dataclass(frozen=True)
class Fact:
    """One line of a page header's facts (the "facts" macro of _table.html)."""
    label: str
    value: str


# the page's one script, in this order
SCRIPTS = ("report.js", "timeline_data.js", "timeline_tools.js", "timeline_stats.js", "timeline_levels.js",
           "timeline_rows.js", "timeline_draw.js", "timeline_overview.js", "timeline_panel.js", "timeline_links.js",
           "timeline_flame.js", "timeline_input.js", "timeline.js")
KIND_NAMES = {"nvtx": "NVTX range", "opengl": "OpenGL call", "osrt": "OS runtime call", "cuda_api": "CUDA API call",
              "state": "thread state",
              "cuda_kernel": "CUDA kernel", "memcpy": "CUDA memory operation", "opengl_gpu": "OpenGL GPU work"}


def templates_dir() -> Path:
    """templates/ at the top of a checkout, or orchestrator/templates once installed."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parents[1] / "templates", here.parent / "templates"):
        if (candidate / "report.html").is_file():
            return candidate
    raise FileNotFoundError("the page templates are missing from this installation (templates/report.html)")


def templates_fingerprint() -> str:
    """The sha256 of the templates a page is drawn from (the HTML, CSS and scripts: their names and bytes, in name
    order; not the scripts' type-checking files). The screenshots of the page in the docs carry the one they were
    made from (docs/images/screenshots.json)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in templates_dir().iterdir() if p.suffix in (".html", ".css", ".js")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


# "frame 716", "frames 716, 101 and 1620", "frames 12-40", "iteration 46": the numbers a page names frames by
_FRAMES = re.compile(r"\b(frames?|iterations?) (\d+(?:(?:, | and |-)\d+)*)")


def frame_links(text: str) -> Markup:
    """The text, escaped, each frame number in it a link that shows that frame in the whole-run timeline (the
    link's fragment is the one the timeline reads: #frame=N)."""
    def linked(match: re.Match) -> str:
        numbers = re.sub(r"\d+", lambda n: f'<a href="#frame={n.group()}" data-frame="{n.group()}">{n.group()}</a>',
                         match.group(2))
        return f"{match.group(1)} {numbers}"
    return Markup(_FRAMES.sub(linked, str(escape(text))))


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(str(templates_dir())), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    script = "\n".join((templates_dir() / name).read_text() for name in SCRIPTS)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    env.globals.update(script=Markup(script), script_hash=f"sha256-{digest}", version=__version__,
                       kind_names=KIND_NAMES, share_kinds=SHARE_KINDS,
                       verdict_kinds=VERDICT_KINDS)
    env.filters["frame_links"] = frame_links
    return env


def compile_templates(names: tuple[str, ...] = ("report.html", "_page.html", "_header.html", "_svg.html",
                                                 "_table.html", "_frames.html", "_timeline.html", "_hotspots.html",
                                                 "_apis.html", "_cpu.html", "_run_timeline.html",
                                                 "_run_timeline_detail.html")) -> None:
    """Compile a run's page's templates now (a page's first rendering spends most of its time on it)."""
    env = environment()
    for name in names:
        env.get_template(name)


def render(template: str, title: str, **context) -> str:
    made_at = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return environment().get_template(template).render(title=title, made_at=made_at, **context)


def write_page(html: str, path: Path) -> Path:
    """Write atomically: a reader never sees half a page."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(path, exc) from None
    return write_text(path, html)
