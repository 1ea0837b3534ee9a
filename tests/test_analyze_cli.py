"""`orchestrate analyze` as a user runs it: tables or JSON on stdout, one line and an exit code on bad input."""
from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess

import pytest
from conftest import run_cli


def test_json_document_on_stdout(export):
    done = run_cli("analyze", "--json", str(export("tflite-pose-xnnpack")))
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["frames"]["count"] == 60 and summary["verdict"]["kind"] == "cpu_bound"


def test_readable_tables(export):
    done = run_cli("analyze", str(export("es2gears-opengl")))
    assert done.returncode == 0, done.stderr
    for heading in ("Frames delimited by eglSwapBuffers", "CPU hotspots", "CPU use (context switches)",
                    "OpenGL API (CPU)", "OS runtime", "verdict"):
        assert re.search(rf"(?<!\w){re.escape(heading)}", done.stdout), heading  # whole: no word glued before it
    assert "not in this report: NVTX ranges, KHR_debug groups, CUDA API" in done.stdout
    # names reach the terminal as text, whole, even piped: '[swrast_dri.so]' is not markup, nothing is cut
    assert "hottest function: [swrast_dri.so] (61 % of samples)" in done.stdout
    assert "│ 61.2   │ [swrast_dri.so]" in done.stdout and "[JIT]" in done.stdout and "…" not in done.stdout


def test_window_and_frame_options(export):
    path = str(export("tflite-pose-xnnpack"))
    one = json.loads(run_cli("analyze", "--json", "--frame", "3", path).stdout)
    everything = json.loads(run_cli("analyze", "--json", "--window", "all", path).stdout)
    assert one["window"]["kind"] == "frame" and everything["window"]["kind"] == "all"
    assert one["hotspots"]["samples"] < everything["hotspots"]["samples"]


def test_a_window_prints_its_calls_per_name_as_sql_counts_them(export):
    path = export("es2gears-opengl")
    done = run_cli("analyze", "--window", "2s:2.1s", str(path))
    assert done.returncode == 0, done.stderr
    rows = {tuple(cell.strip() for cell in line.split("│")[1:3]): line.split("│")[3].strip()
            for line in done.stdout.splitlines() if line.count("│") == 9}
    with sqlite3.connect(path) as conn:
        for kind, table, name in (("opengl", "OPENGL_API", "glClear"), ("osrt", "OSRT_API", "poll")):
            count, = conn.execute(f'SELECT count(*) FROM {table} AS t JOIN StringIds AS s ON s.id = t.nameId WHERE '
                                  f's.value = ? AND t."end" > 2000000000 AND t.start < 2100000000', (name,)).fetchone()
            assert rows[(kind, name)] == str(count)


def error_line(done: subprocess.CompletedProcess) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    return lines[0]


def test_not_sqlite(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("frame times: 81 ms\n")
    done = run_cli("analyze", str(text))
    assert done.returncode == 15 and "is not an SQLite file" in error_line(done)


def test_truncated_export(tmp_path, export):
    whole = export("tflite-pose-xnnpack").read_bytes()
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(whole[:len(whole) // 2])
    done = run_cli("analyze", str(cut))
    assert done.returncode == 15 and "is truncated" in error_line(done)


def test_export_without_known_tables(tmp_path):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE readings (t INT, value REAL)")
        db.execute("INSERT INTO readings VALUES (1, 2.5)")
    done = run_cli("analyze", str(other))
    assert done.returncode == 15 and "holds no trace events" in error_line(done)


def test_missing_file(tmp_path):
    done = run_cli("analyze", str(tmp_path / "nope.nsys-rep"))
    assert done.returncode == 15 and "no such file" in error_line(done)


@pytest.mark.parametrize("args, message", [
    (["--window", "100s:200s"], "lies outside the capture"),
    (["--frame", "600"], "the capture has frames 0 to 59"),
    (["--process", "glmark2"], "no such process"),
    (["--window", "1s:2s", "--frame", "2"], "not allowed with argument"),
])
def test_bad_selection_is_a_usage_error(export, args, message):
    done = run_cli("analyze", *args, str(export("tflite-pose-xnnpack")))
    assert done.returncode == 2 and message in error_line(done)


@pytest.mark.integration
@pytest.mark.machine
@pytest.mark.skipif(not shutil.which("nsys"), reason="needs nsys (the README's test command installs it)")
def test_an_empty_capture_says_so(tmp_path):
    """A real capture with every trace off: nsys writes a report with no events in it. nsys 2022.4 now and then
    ends a capture with status 1 while a board's capture runs beside it (the other worker's): such a capture is
    taken again, twice at most, and a third failure shows what nsys said."""
    for _attempt in range(3):
        done = subprocess.run(["nsys", "profile", "--trace=none", "--sample=none", "--cpuctxsw=none",
                               "--force-overwrite=true", "--output", str(tmp_path / "empty"), "--export=sqlite",
                               "true"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        if done.returncode == 0:
            break
    assert done.returncode == 0, f"nsys failed 3 times (status {done.returncode}): {done.stdout}{done.stderr}"
    report = next(p for p in tmp_path.glob("empty.*") if p.suffix in (".sqlite", ".nsys-rep", ".qdstrm"))
    if report.suffix == ".qdstrm":  # Debian's nsys leaves the raw capture: import it like the agent does
        from orchestrator.nsys.host import find_host_nsys, import_on_host
        report = import_on_host(find_host_nsys(), report)
    done = run_cli("analyze", str(report))
    assert done.returncode == 15 and "holds no trace events" in error_line(done)
    assert "an empty capture" in error_line(done)


def test_report_command_writes_the_page_beside_the_report(export, tmp_path):
    source = tmp_path / "pose.sqlite"
    source.write_bytes(export("tflite-pose-xnnpack").read_bytes())
    done = run_cli("report", str(source))
    assert done.returncode == 0, done.stderr
    page = tmp_path / "pose.html"
    assert done.stdout.strip() == str(page)
    html = page.read_text()
    assert "on python (29837) is spent running on a CPU" in html and 'data-chart="flame-graph"' in html
    assert 'data-chart="frame-shares"' in html and 'data-share="cpu"' in html
    done = run_cli("report", str(source), "-o", str(tmp_path / "out" / "x.html"))
    assert done.returncode == 0 and (tmp_path / "out" / "x.html").is_file()


@pytest.mark.parametrize("args, message", [
    (["report", "/nonexistent/run"], "error: /nonexistent/run: no such file or folder (give a run folder"),
    (["compare", "/nonexistent/a"], "error: compare needs two runs or more"),
    (["compare", "A", "B", "--label", "x"], "error: 1 labels for 2 runs (give one --label per run"),
])
def test_report_and_compare_bad_input_is_one_line(args, message, tmp_path):
    if args[0] == "compare" and len(args) > 2:
        for name in ("A", "B"):
            (tmp_path / name).mkdir()
            (tmp_path / name / "summary.json").write_text('{"frames": null}')
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(message) and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_folder_that_is_no_run_is_refused(tmp_path):
    done = run_cli("report", str(tmp_path))
    assert done.returncode == 2
    assert f"error: {tmp_path} is not a run folder (no run.json, summary.json or report in it)" in done.stderr
