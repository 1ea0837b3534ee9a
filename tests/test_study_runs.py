"""`orchestrate study` for real: the test sshd, real nsys, cells with repeats over one connection, a failed
cell with its reason, statistics in study.json, and an interrupted study that resumes."""
from __future__ import annotations

import json
import re
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest
import yaml
from board_state import assert_board_clean
from browser import assert_clean, open_page
from conftest import REPO, run_cli, write_inventory
from scenarios import board, ssh_args, start_cli
from share_sql import POINTS, frames_read, global_tid, pct_of, renderer_wait_ns

from orchestrator.documents.study import read_study
from orchestrator.documents.summary import Summary
from orchestrator.parsers.renderer import gl_renderer
from orchestrator.report import load_run, write_report

pytestmark = pytest.mark.integration

# prints the seed benchmark's lines with the cell's figure, then loops until the agent stops it;
# mode=fail exits 3 at once, as a benchmark that cannot load its model does
APP = ("if [ {mode} = fail ]; then echo 'cannot load the model' >&2; exit 3; fi; "
       "echo 'First Inference : {first} ms'; echo 'Inference : 5.0 ms'; while true; do sleep 0.2; done")


# captures again when nsys stalls writing its report: nsys 2022.4 stalled on three captures in a row of one cell
# of the stand-in studies in two fresh-clone CI runs of twelve (the posebench matrix, the delegate study), beside
# the suite's other captures; a fourth capture keeps such a cell from failing for nsys's moods alone
RETRIES = ("--retries", "3")


def study_file(tmp_path: Path, **changes: object) -> Path:
    data = {"study": "loop-study", "command": ["sh", "-c", APP], "parser": "tftrt-bench", "repeat": 2,
            "target": "board", "duration_s": 2, "trace": ["osrt"], "sample": "none", "cpuctxsw": "none",
            "matrix": {"first": [100, 200], "mode": ["run", "fail"]},
            "exclude": [{"first": 200, "mode": "fail"}], **changes}
    path = tmp_path / "loop-study.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def inventory(sshd, tmp_path: Path) -> Path:
    return write_inventory(tmp_path / "inventory.yaml", {"board": board(sshd, tmp_path / "work")})


def test_a_study_runs_every_cell_with_repeats_and_says_which_failed_and_why(sshd, browser, tmp_path):
    done = run_cli("study", str(study_file(tmp_path)), "--inventory", str(inventory(sshd, tmp_path)),
                   "--out", str(tmp_path / "runs"), *RETRIES, *ssh_args(sshd), timeout=600)
    assert done.returncode == 20, done.stderr
    folder = Path(done.stdout.strip().splitlines()[-1])
    assert folder.parent == tmp_path / "runs" and folder.name.endswith("-loop-study")
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    document = json.loads((folder / "study.json").read_text())
    assert line.startswith("error: 1 of 3 cells failed; the first, first=100, mode=fail: the app exited with"), \
        [(c["label"], c.get("reason")) for c in document["cells"]]
    assert read_study(folder).as_json() == document  # its one reader reads it whole
    assert document["status"] == "complete" and document["repeat"] == 2
    assert [(c["label"], c["status"]) for c in document["cells"]] == [
        ("first=100, mode=run", "ok"), ("first=100, mode=fail", "failed"), ("first=200, mode=run", "ok")]
    ran, failed, other = document["cells"]
    assert "status 3" in failed["reason"] and len(failed["runs"]) == 1  # its second repeat was not tried
    assert failed["metrics"] == {}
    for cell, first in ((ran, 100.0), (other, 200.0)):
        figure = cell["metrics"]["app.first_inference_ms"]
        assert (figure["values"], figure["median"], figure["ci95"], figure["unit"]) == (
            [first, first], first, [first, first], "ms")
        assert cell["metrics"]["app.inference_mean_ms"]["values"] == [5.0, 5.0]
        assert len(cell["runs"]) == 2 and cell["reused"] == []
    [slower] = [c for c in document["comparisons"] if c["metric"] == "app.first_inference_ms"]
    assert (slower["base"], slower["other"], slower["verdict"], slower["rounds"]) == (0, 2, "slower", 2)
    assert slower["relative"] == pytest.approx(1.0)
    [same] = [c for c in document["comparisons"] if c["metric"] == "app.inference_mean_ms"]
    assert same["verdict"] == "no clear difference"
    # the cells took turns (A B C A C: the failed cell's second repeat was not tried), as the order says
    assert [(o["round"], o["cell"]) for o in document["order"]] == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 2)]
    assert [o["run"] for o in document["order"]] == [ran["runs"][0], failed["runs"][0], other["runs"][0],
                                                     ran["runs"][1], other["runs"][1]]
    records = [json.loads((folder / name / "run.json").read_text()) for c in document["cells"] for name in c["runs"]]
    assert len(records) == 5
    for record in records:
        assert record["agent"]["shared"] is True  # one deployment for the study, no connect or deploy per run
        assert not {"connect", "deploy"} & set(record["phases"])
        assert record["study"]["name"] == "loop-study" and record["study"]["fingerprint"] == \
            document["target_fingerprint"]
        state = record["board_state"]["before"]
        assert len(state["load_average"]) == 3 and state["power_mode"] is None
    assert [r["study"]["repeat"] for r in records] == [1, 2, 1, 1, 2]
    started = {name: json.loads((folder / name / "run.json").read_text())["started_at"] for name in
               [o["run"] for o in document["order"]]}
    assert list(started.values()) == sorted(started.values())  # run in that order
    assert [r["study"]["variables"]["first"] for r in records] == [100, 100, 100, 200, 200]
    assert all("after" in r["board_state"] for r in records if r["status"] == "ok")
    assert_board_clean(tmp_path / "work")
    # the page: drawn as the data says, the failed cell shown failed with its reason, never as 0
    page = folder / "study.html"
    opened = open_page(browser, page)
    assert_clean(opened, page)
    drawn = opened.charts()
    assert drawn["study-app.first_inference_ms"]["drawn"] == 2 and drawn["study-app.inference_mean_ms"]["drawn"] == 2
    states = opened.page.eval_on_selector_all("table[data-table='app.first_inference_ms'] td",
                                              "tds => tds.map(t => [t.dataset.state, t.textContent])")
    assert states == [["ok", "100100–100"], ["failed", "failed"], ["ok", "200200–200"], ["missing", "–"]]
    reason = opened.page.locator("[data-failed-cell]").text_content()
    assert reason.startswith("first=100, mode=fail failed: the app exited with status 3")
    assert opened.page.locator("svg[data-chart='study-app.first_inference_ms'] text.failed").count() == 1
    links = opened.page.eval_on_selector_all("a[data-run]", "as => as.map(a => a.getAttribute('href'))")
    assert len(links) == 5 and all((folder / href).is_file() for href in links)
    opened.screenshot("study-loop-with-a-failed-cell")


def test_an_interrupted_study_resumes_and_reuses_what_it_had(sshd, tmp_path):
    path = study_file(tmp_path, matrix={"first": [100, 200], "mode": ["run"]}, exclude=None)
    inv = inventory(sshd, tmp_path)
    proc = start_cli("study", str(path), "--inventory", str(inv), "--out", str(tmp_path / "runs"), *RETRIES,
                     *ssh_args(sshd))
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:  # the second cell's first run is capturing
        runs = [json.loads(p.read_text()) for p in (tmp_path / "runs").glob("*/*/run.json")]
        if any(r.get("study", {}).get("variables", {}).get("first") == 200 and r.get("stage") == "capturing"
               for r in runs):
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=180)
    # the study stops, whatever nsys does after the early end (a stall the watchdog ends is said in the line)
    assert proc.returncode == 16, err
    assert err.strip().splitlines()[-1].startswith("error: interrupted") and "--duration" not in err
    [first_folder] = list((tmp_path / "runs").iterdir())
    stopped = json.loads((first_folder / "study.json").read_text())
    assert stopped["status"] == "interrupted" and stopped["cells"][0]["status"] == "ok"
    assert len(stopped["cells"][0]["runs"]) == 1  # the cells take turns: the first cell's first round only
    [interrupted_run] = stopped["cells"][1]["runs"]  # no run after the interrupted one
    assert stopped["cells"][1]["status"] == "interrupted"
    assert stopped["stopped_in"] == {"cell": 1, "label": "first=200, mode=run", "repeat": 1, "run": interrupted_run}
    assert len(list(first_folder.glob("*/run.json"))) == 2
    again = run_cli("study", str(path), "--inventory", str(inv), "--out", str(tmp_path / "runs"), *RETRIES,
                    *ssh_args(sshd), timeout=600)
    assert again.returncode == 0, again.stderr
    folder = Path(again.stdout.strip().splitlines()[-1])
    document = json.loads((folder / "study.json").read_text())
    assert read_study(folder).as_json() == document  # its one reader reads it whole
    first, second = document["cells"]
    assert first["reused"] == stopped["cells"][0]["runs"] == first["runs"][:1] and len(first["runs"]) == 2
    assert all((folder / name).is_symlink() and (folder / name / "summary.json").is_file() for name in first["reused"])
    assert not (folder / first["runs"][1]).is_symlink()
    assert second["reused"] == [] and len(second["runs"]) == 2 and second["status"] == "ok"
    # round 1 of the first cell was reused: its second round waits for the round-2 turn
    assert [(o["round"], o["cell"]) for o in document["order"]] == [(1, 1), (2, 0), (2, 1)]
    # the reused run shared no round with this folder's: only round 2 pairs the cells, and one round never decides
    assert first["metrics"]["app.first_inference_ms"]["rounds"] == [None, 100.0]
    [slower] = [c for c in document["comparisons"] if c["metric"] == "app.first_inference_ms"]
    assert (slower["rounds"], slower["verdict"]) == (1, "not sure yet")
    assert first["metrics"]["app.first_inference_ms"]["median"] == 100.0
    fresh = run_cli("study", str(path), "--inventory", str(inv), "--out", str(tmp_path / "runs"), "--fresh",
                    "--repeat", "1", "--set", "first=100", *RETRIES, *ssh_args(sshd), timeout=600)
    assert fresh.returncode == 0, fresh.stderr
    redone = json.loads((Path(fresh.stdout.strip().splitlines()[-1]) / "study.json").read_text())
    assert [(c["label"], c["reused"], len(c["runs"])) for c in redone["cells"]] == [("first=100, mode=run", [], 1)]
    assert redone["repeat"] == 1
    assert_board_clean(tmp_path / "work")


def test_study_file_mistakes_are_one_line_before_anything_connects(tmp_path):
    path = study_file(tmp_path, args=["{nms}"])
    done = run_cli("study", str(path), "--target", "nowhere")
    assert done.returncode == 3 and done.stderr.count("\n") == 1
    assert f"{path}: 'args' names {{nms}}, which is not a matrix variable" in done.stderr
    no_target = study_file(tmp_path, target=None)
    done = run_cli("study", str(no_target))
    assert done.returncode == 2 and "names no target" in done.stderr


@pytest.mark.alone  # posebench samples the CPU: see test_profile_e2e
@pytest.mark.parametrize("study, settings, repeat, labels, last_args", [
    ("posebench-delegate", ["frames=40", "threads=2"], 2, ["delegate=xnnpack, threads=2, frames=40",
                                                           "delegate=none, threads=2, frames=40"], "--delegate none"),
    ("posebench-matrix", ["frames=40", "threads=1", "delegate=xnnpack"], 1,
     ["threads=1, delegate=xnnpack, nms=vectorised, frames=40", "threads=1, delegate=xnnpack, nms=loop, frames=40"],
     "--nms loop"),
    # a frame on llvmpipe takes about a second: 6 frames
    ("posebench-gpu", ["frames=6", "delegate=gl"], 1, ["delegate=gl, threads=2, frames=6"], "--delegate gl"),
])
def test_the_stand_in_studies_run_the_shipped_app_with_its_models(sshd, browser, tmp_path, study, settings, repeat,
                                                                  labels, last_args):
    """The stand-in studies as shipped, smaller (one thread count, one delegate of the matrix, 40 frames or 6
    on GL, 2 repeats of the delegate study, 1 of the others): posebench and its models go up once, every cell's
    figures come from the app's own lines and from the report's NVTX frames. 40 frames keep the app running
    for a second or more (nsys 2022.4 stalls far more often after an app gone within its first second) and
    keep the runs short under nsys on a busy machine (a frame without a delegate takes ~125 ms here, 5 times
    one with XNNPACK)."""
    inv = write_inventory(tmp_path / "inventory.yaml", {"board": board(sshd, tmp_path / "work",
                                                                       orchestrate_python=sys.executable)})
    sets = [arg for setting in settings for arg in ("--set", setting)]
    done = run_cli("study", str(REPO / "studies" / f"{study}.yaml"), "--target", "board", "--inventory", str(inv),
                   "--out", str(tmp_path / "runs"), "--repeat", str(repeat), *sets, *RETRIES, *ssh_args(sshd),
                   timeout=900)
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip().splitlines()[-1])
    document = json.loads((folder / "study.json").read_text())
    assert read_study(folder).as_json() == document  # its one reader reads it whole
    assert [c["label"] for c in document["cells"]] == labels
    for cell in document["cells"]:
        metrics = cell["metrics"]
        assert cell["status"] == "ok" and len(metrics["app.first_inference_ms"]["values"]) == repeat, cell.get("notes")
        assert metrics["app.inference_mean_ms"]["median"] > 0 and metrics["steady_mean_ms"]["median"] > 0
        assert cell["verdict"] is not None
        # the app's own steady mean and the report's NVTX frames measure the same frames
        own, frames = (metrics[m]["median"] for m in ("app.inference_mean_ms", "steady_mean_ms"))
        assert abs(own - frames) / own < 0.25
    records = [json.loads((folder / n / "run.json").read_text()) for c in document["cells"] for n in c["runs"]]
    uploads = [[f["uploaded"] for f in r["app_files"]] for r in records]
    assert uploads[0] == [True] * 5 and all(u == [False] * 5 for u in uploads[1:])
    assert [f["name"] for f in records[0]["app_files"]] == ["posebench.py", "gl_delegate.py", "gl_context.py",
                                                            "pose_detection.tflite", "pose_landmark_full.tflite"]
    assert records[0]["app"]["command"][0] == "{python}" and sys.executable in records[0]["remote_command"]
    assert last_args in records[-1]["remote_command"]
    if len(labels) > 1:
        assert {c["metric"] for c in document["comparisons"]} >= {"steady_mean_ms", "app.inference_mean_ms"}
    if study == "posebench-gpu":  # the GPU's side of each frame: the detector's dispatches, as nsys saw them
        [cell] = document["cells"]
        assert cell["metrics"]["gpu_ms_per_frame"]["median"] > 0
        run_dir = folder / cell["runs"][0]
        summary = json.loads((run_dir / "summary.json").read_text())
        gpu = summary["gpu_frames"]
        [dispatch] = [k for k in gpu["kinds"] if k["name"] == "glDispatchCompute"]
        # every op of the graph in every frame, each counted in the frame whose call queued it; nsys reads GPU
        # timings some calls late, so the last frame's last dispatches may have none: that frame is said to be
        # incomplete and left out of the medians
        counts, last = dispatch["count_per_frame"], summary["frames"]["count"] - 1
        assert counts[:-1] == [107] * last and 0 < counts[-1] <= 107, counts
        assert gpu["incomplete_frames"] == ([last] if counts[-1] < 107 else []) and gpu["by_gpu_start"] == 0
        assert dispatch["steady_median_count"] == 107
        # llvmpipe runs each dispatch on its CPU threads while glDispatchCompute waits: the GPU sets the pace,
        # and the verdict says what it ran, on which renderer (the one posebench printed), and that it is the CPU
        said = gl_renderer((run_dir / "app.stderr.log").read_text())
        assert said is not None and said.startswith("llvmpipe (LLVM ") and gpu["renderer"] == said
        verdict, found = summary["verdict"], Summary.from_json(summary).attribution
        assert verdict["kind"] == "software_renderer", verdict
        # who ran the dispatches while the thread waited: llvmpipe's compute threads, which have no name
        ran = r" while (thread|llvmpipe-\d) \(\d+\).* ran glDispatchCompute on the CPU"
        assert re.search(ran, verdict["summary"]), verdict["summary"]
        assert f"the renderer is {said}, a software renderer" in verdict["summary"]
        # the thread waits in its GL calls while llvmpipe's threads run: the largest share, as SQL finds it
        spans = frames_read(Summary.from_json(summary))
        with sqlite3.connect(run_dir / "report.sqlite") as conn:
            waiting = pct_of(renderer_wait_ns(conn, global_tid(conn, found.thread), spans), spans)
        assert found.largest == "gpu" and found.share("gpu").pct == pytest.approx(waiting, abs=POINTS)
        assert cell["metrics"]["share_gpu_ms"]["median"] > 0  # the study's column for that share
        # the run's own page: the GPU's figures and series, and the GPU's row in the frame's timeline
        run_page = write_report(run_dir, run_dir / "report.html")
        shown = open_page(browser, run_page)
        assert_clean(shown, run_page)
        assert shown.charts()["gpu-frame-series"]["drawn"] == summary["frames"]["count"]
        facts = shown.page.locator("#gpu-frames + dl").inner_text()
        assert said in facts and "per frame over 107 calls" in facts
        if gpu["incomplete_frames"]:
            assert f"{gpu['unrecorded_calls']} calls queued after nsys's last GPU record (frame {last})" in facts
        # the frame shown is one whose 107 dispatches nsys recorded: the GPU's row holds every piece of GPU work
        # that overlaps it (its own, and at most a neighbour's that ran across its edge)
        timeline = load_run(run_dir, run_dir).timeline
        assert timeline["frame"] not in gpu["incomplete_frames"]
        with sqlite3.connect(run_dir / "report.sqlite") as conn:
            [[overlapping]] = conn.execute('SELECT count(*) FROM OPENGL_WORKLOAD WHERE start < ? AND "end" > ?',
                                           (timeline["end_ns"], timeline["start_ns"])).fetchall()
        assert shown.page.locator("[data-chart=frame-timeline] rect.k-opengl_gpu").count() == overlapping
        assert 107 <= overlapping <= 109
        shown.screenshot("report-posebench-gl")
    assert_board_clean(tmp_path / "work")
    page = folder / "study.html"
    opened = open_page(browser, page)
    assert_clean(opened, page)
    drawn = opened.charts()
    for key in ("steady_mean_ms", "cores_busy", "app.first_inference_ms", "app.inference_mean_ms"):
        assert drawn[f"study-{key}"]["drawn"] == len(labels)  # one bar per cell, as study.json says
    opened.screenshot(f"study-{study}")
