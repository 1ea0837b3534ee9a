"""What `analyze --json` and `compare --json` print for the stored exports and the old folders, paths made
relative: test_same_outputs.py holds it equal to the outputs stored in tests/data/outputs (see its SOURCES.md:
when they were written, and each change of behaviour that wrote them again). ``python tests/same_outputs.py DIR``
writes today's into DIR."""
from __future__ import annotations

import gzip
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

TESTS = Path(__file__).parent
DATA = TESTS / "data"
REPO = TESTS.parent
EXPORTS = ("es2gears-opengl", "tflite-pose-xnnpack", "python-cpu-sampling", "cpuonly_sampling_2024",
           "abacus_titanrtx_2020.export2022_4", "flux_gtx1650_2019.export2022_4", "nsu_v100_2022.export2022_4",
           "ompoffload_t4_2023", "openacc_rtx3080_2020")
# each case: its name, the command's arguments (an export by its name in braces, a folder of tests/data as is)
CASES = [*((f"analyze-{name}", ("analyze", f"{{{name}}}", "--json")) for name in EXPORTS),
         ("analyze-es2gears-frame-100", ("analyze", "{es2gears-opengl}", "--frame", "100", "--json")),
         ("analyze-es2gears-window-all", ("analyze", "{es2gears-opengl}", "--window", "all", "--json")),
         ("analyze-tflite-window", ("analyze", "{tflite-pose-xnnpack}", "--window", "1s:2s", "--json")),
         ("compare-exports", ("compare", "{es2gears-opengl}", "{tflite-pose-xnnpack}", "--json")),
         ("compare-old-folders", (
             "compare", "written-before-typed-documents/20261203T170830Z-local-es2gears",
             "written-before-typed-messages/20261205T183609Z-local-es2gears",
             "written-before-one-record-type/20261206T143333Z-local-es2gears",
             "written-before-one-record-type/20261206T143407Z-fleet-es2gears/20261206T143407Z-local-es2gears",
             "--json")),
         ("compare-study-runs", (
             "compare", *(f"written-before-one-record-type/20261206T143350Z-posebench-delegate/{run}"
                          for run in ("20261206T143350Z-local-posebench", "20261206T143357Z-local-posebench")),
             "written-before-typed-documents/20261203T180308Z-posebench-delegate/20261203T180308Z-local-posebench",
             "--json")),
         ("report-es2gears", ("report", "{es2gears-opengl}", "-o", "page.html")),
         ("report-tflite-pose", ("report", "{tflite-pose-xnnpack}", "-o", "page.html")),
         ("report-old-run", ("report", "written-before-one-record-type/20261206T143333Z-local-es2gears",
                             "-o", "page.html")),
         ("compare-page", ("compare", "{es2gears-opengl}", "{tflite-pose-xnnpack}", "-o", "page.html"))]


def unpack(name: str, folder: Path) -> Path:
    target = folder / f"{name}.sqlite"
    if not target.exists():
        with gzip.open(DATA / "nsys" / f"{name}.sqlite.gz", "rb") as packed:
            target.write_bytes(packed.read())
    return target


def output(args: tuple[str, ...], folder: Path) -> Any:
    """The command's JSON, or the page it wrote (``-o page.html``), run in ``folder`` (tests/data's folders
    copied there, exports unpacked there)."""
    argv = [unpack(arg[1:-1], folder).name if arg.startswith("{") else arg for arg in args]
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="120", XDG_DATA_HOME=str(folder / "user-data"))
    env.pop("ORCHESTRATE_DB", None)  # no results database: compare's gate says there is none
    done = subprocess.run([sys.executable, "-m", "orchestrator", *argv], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{argv}: {done.stderr}"
    text = (folder / "page.html").read_text() if "page.html" in argv else done.stdout
    text = text.replace(str(folder) + "/", "").replace(str(folder), ".")
    text = text.replace(shlex.join([sys.executable, "-m", "orchestrator"]), "orchestrate")  # next steps' program
    return undated(text) if "page.html" in argv else json.loads(text)


def undated(page: str) -> str:
    """A page without the minute it was made (its footer's) and without its script (the timeline's code, whose
    behaviour the Chromium tests hold; its data stays), whose hash the page's policy names."""
    page = re.sub(r"made \d{4}-\d\d-\d\d \d\d:\d\d UTC", "made (date)", page)
    page = re.sub(r"script-src 'sha256-[^']*'", "script-src '(the script's hash)'", page)
    return re.sub(r"<script>.*?</script>", "<script>(the page's script)</script>", page, count=1, flags=re.S)


def outputs(folder: Path) -> Iterator[tuple[str, Any]]:
    for name, args in CASES:
        yield name, output(args, folder)


def stored(name: str) -> Any:
    with gzip.open(DATA / "outputs" / f"{name}.json.gz", "rt") as packed:
        found = json.load(packed)
    return undated(found) if isinstance(found, str) else found


if __name__ == "__main__":
    import shutil
    import tempfile
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        for old in ("written-before-typed-documents", "written-before-typed-messages",
                    "written-before-one-record-type"):
            shutil.copytree(DATA / old, Path(work) / old)
        for case, found in outputs(Path(work)):
            with gzip.GzipFile(out / f"{case}.json.gz", "wb", mtime=0) as packed:
                packed.write(json.dumps(found, indent=1, sort_keys=True).encode() + b"\n")
            print(case)
