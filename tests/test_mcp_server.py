"""`orchestrate mcp` for real: the server started as a subprocess, asked through the official SDK's client over stdio,
on a root holding a real es2gears export (run folder), a real CUDA export (instant-ngp, a bare report), run and study
folders an earlier release wrote, and a results database. Each figure is checked against the test's own SQL over
the export (not the document the tool read) and against the SQL the answer gives as its evidence."""
from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from mcp import Client
from mcp_root import RUN, ask, in_a_thread, make_results_db, make_root, server_params

pytestmark = pytest.mark.integration

TOOLS = {"runs", "summary", "frames", "window", "hotspots", "gpu_work", "compare", "history"}
PROFILER = "SELECT t.globalTid FROM ThreadNames AS t JOIN StringIds AS s ON s.id = t.nameId WHERE s.value LIKE '[NSys%'"


@pytest.fixture(scope="module")
def root(tmp_path_factory, export) -> Path:
    return make_root(tmp_path_factory.mktemp("mcp-root"), export)


@pytest.fixture(scope="module")
def results_db(root, tmp_path_factory) -> Path:
    return make_results_db(root, tmp_path_factory.mktemp("mcp-db") / "results.db")


def _own_rows(conn: sqlite3.Connection, table: str, span: tuple[int, int], extra: str = "") -> dict[str, tuple]:
    """The test's own figures per name: count, total, min, max of the table's events overlapping the span, off nsys's
    own threads."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
        return {}
    rows = conn.execute(
        f'SELECT s.value, count(*), sum(t."end" - t.start), min(t."end" - t.start), max(t."end" - t.start) '
        f'FROM {table} AS t JOIN StringIds AS s ON s.id = t.nameId WHERE t."end" > ? AND t.start < ? '
        f'AND t.globalTid NOT IN ({PROFILER}) {extra} GROUP BY s.value', span).fetchall()
    return {name: tuple(figures) for name, *figures in rows}


def test_every_tool_is_offered_and_no_capture_without_allow_capture(root):
    async def listed() -> set[str]:
        async with Client(server_params(root)) as client:
            return {tool.name for tool in (await client.list_tools()).tools}
    assert in_a_thread(listed) == TOOLS


def test_window_figures_equal_sql_over_the_export(root, export):
    """Random windows of es2gears and instant-ngp: every row's count, total, min and max equal the test's own SQL,
    and the answer's own SQL gives every figure, self time included."""
    random.seed(55)
    calls, spans = [], []
    for run, path in (("es2gears", export("es2gears-opengl")),
                      ("instantngp.sqlite", export("instantngp_rtx3070_2021.export2022_4"))):
        with sqlite3.connect(path) as conn:
            lo, hi = conn.execute("SELECT min(start), max(\"end\") FROM OSRT_API").fetchone()
        for _ in range(3):
            a = random.randint(lo, hi - 10**8)
            span = (a, a + random.randint(10**6, 3 * 10**8))
            calls.append(("window", {"run": run, "window": f"{span[0]}ns:{span[1]}ns", "limit": 400,
                                     "kinds": ["osrt", "opengl", "cuda_api", "nvtx", "cuda_kernel"]}))
            spans.append((path, span))
    answers = ask(root, calls)
    checked = 0
    for (path, span), (failed, answer) in zip(spans, answers):
        assert not failed, answer
        assert answer["window"] == {"start_ns": span[0], "end_ns": span[1]}
        assert answer["after_this_page"] == 0
        with sqlite3.connect(path) as conn:
            own = {"osrt": _own_rows(conn, "OSRT_API", span, "AND t.eventClass = 27"),
                   "opengl": _own_rows(conn, "OPENGL_API", span),
                   "cuda_api": _own_rows(conn, "CUPTI_ACTIVITY_KIND_RUNTIME", span)}
            for row in answer["rows"]:
                figures = (row["count"], row["total_ns"], row["min_ns"], row["max_ns"])
                if row["kind"] in own:
                    assert figures == own[row["kind"]][row["name"]], row["name"]
                    checked += 1
                got = conn.execute(row["evidence"]["sql"]).fetchone()
                assert got[:4] == figures and got[4] == pytest.approx(row["mean_ns"])
                if "self_sql" in row["evidence"]:
                    assert conn.execute(row["evidence"]["self_sql"]).fetchone()[0] == row["self_ns"]
                    assert row["self_ns"] <= row["total_ns"]
            named = {(r["kind"], r["name"]) for r in answer["rows"]}
            assert {("osrt", n) for n in own["osrt"]} <= named and {("opengl", n) for n in own["opengl"]} <= named
    assert checked > 30


def test_frames_and_summary_equal_sql_and_their_documents(root, export):
    (f1, frames), (f2, one), (f3, summary) = ask(root, [
        ("frames", {"run": "es2gears", "slowest": 3}), ("frames", {"run": "es2gears", "frame": 100, "slowest": 0}),
        ("summary", {"run": "kept/base"})])
    assert not (f1 or f2 or f3)
    with sqlite3.connect(export("es2gears-opengl")) as conn:
        swaps = [row[0] for row in conn.execute(
            "SELECT a.\"end\" FROM OPENGL_API AS a JOIN StringIds AS s ON s.id = a.nameId WHERE s.value = "
            "'eglSwapBuffers' ORDER BY a.\"end\"")]
        lengths = [b - a for a, b in zip(swaps, swaps[1:])]
        steady = lengths[frames["frames"]["steady_first"] - 1:]
        assert frames["frames"]["count"] == len(swaps)
        assert frames["frames"]["steady"]["mean_ns"] == pytest.approx(sum(steady) / len(steady))
        assert frames["frames"]["steady"]["max_ns"] == max(steady)
        assert [f["duration_ns"] for f in frames["slowest"]] == sorted(steady, reverse=True)[:3]
        listing = frames["frames"]["evidence"]["with"]
        for row in frames["slowest"]:
            assert row["duration_ns"] == lengths[row["index"] - 1]
            assert row["evidence"]["with"] == "frames.evidence.with"
            assert conn.execute(listing + row["evidence"]["sql"]).fetchone() == (row["start_ns"], row["duration_ns"])
        for key, sql in frames["frames"]["evidence"]["sql"].items():
            value = frames["frames"]
            for part in key.split("."):
                value = value[part]
            assert conn.execute(listing + sql).fetchone()[0] == pytest.approx(value), key
        frame = one["frame"]
        assert frame["duration_ns"] == lengths[99] and frame["start_ns"] == swaps[99]
        assert sum(s["ns"] for s in frame["shares"]) == pytest.approx(frame["duration_ns"], rel=0.02)
        assert frame["calls"] and all(c["kind"] in ("opengl", "osrt", "nvtx") for c in frame["calls"])
    written = json.loads((RUN / "summary.json").read_text())
    assert summary["verdict"]["kind"] == written["verdict"]["kind"]
    for share in summary["shares"]:
        name = share["evidence"]["field"].split(".")[2]
        assert share["ns"] == written["attribution"]["shares"][name]["ns"]
    assert summary["frames"]["steady"]["mean_ns"] == written["frames"]["steady"]["mean_ns"]
    assert summary["validity"]["valid"] is True and summary["board"]["target"] == "local"


def test_hotspots_and_gpu_work_equal_sql(root, export):
    (f1, hot), (f2, gpu), (f3, gl) = ask(root, [
        ("hotspots", {"run": "es2gears", "window": "all", "top": 10}),
        ("gpu_work", {"run": "instantngp.sqlite", "window": "all", "limit": 5}),
        ("gpu_work", {"run": "es2gears", "window": "1s:2s", "limit": 5})])
    assert not (f1 or f2 or f3)
    with sqlite3.connect(export("es2gears-opengl")) as conn:
        samples = conn.execute(
            f"SELECT count(*) FROM COMPOSITE_EVENTS WHERE globalTid NOT IN ({PROFILER})").fetchone()[0]
        assert hot["samples"] == samples == conn.execute(hot["samples_evidence"]["sql"]).fetchone()[0]
        plain = 0
        for row in hot["bottom_up"]:
            assert conn.execute(row["evidence"]["sql"]).fetchone()[0] == row["samples"]
            if not row["function"].startswith("["):  # a symbol nsys named: the test's own count
                plain += 1
                assert conn.execute(
                    "SELECT count(*) FROM SAMPLING_CALLCHAINS AS c JOIN StringIds AS s ON s.id = c.symbol "
                    f"JOIN COMPOSITE_EVENTS AS e ON e.id = c.id WHERE c.stackDepth = 0 AND s.value = ? "
                    f"AND e.globalTid NOT IN ({PROFILER})", (row["function"],)).fetchone()[0] == row["samples"]
        assert plain >= 3
        assert hot["top_down"]["samples"] == samples
        for pair in gl["pairs"]:  # each workload once per call name, however many stretches of calls it has
            own = conn.execute(
                "SELECT count(*), sum(w.\"end\" - w.start) FROM OPENGL_WORKLOAD AS w JOIN StringIds AS n ON n.id = "
                "w.nameId WHERE n.value = ? AND w.\"end\" > 1000000000 AND w.start < 2000000000 AND EXISTS (SELECT 1 "
                "FROM OPENGL_API AS a JOIN StringIds AS c ON c.id = a.nameId WHERE c.value = ? AND a.correlationId "
                "BETWEEN w.correlationId AND w.endCorrelationId)", (pair["gpu"], pair["call"])).fetchone()
            assert (pair["gpu_events"], pair["gpu_ns"]) == own == conn.execute(pair["evidence"]["sql"]).fetchone()
        assert {p["call"] for p in gl["pairs"]} >= {"glClear", "glDrawArrays", "eglSwapBuffers"}
        for row in hot["inclusive"]:
            assert conn.execute(row["evidence"]["sql"]).fetchone()[0] == row["samples"]
    with sqlite3.connect(export("instantngp_rtx3070_2021.export2022_4")) as conn:
        for pair in gpu["pairs"]:
            if pair["gpu_kind"] != "cuda_kernel":
                continue
            own = conn.execute(
                "SELECT count(*), sum(k.\"end\" - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS n "
                "ON n.id = k.shortName WHERE n.value = ? AND k.correlationId IN (SELECT r.correlationId FROM "
                "CUPTI_ACTIVITY_KIND_RUNTIME AS r JOIN StringIds AS c ON c.id = r.nameId WHERE c.value = ?)",
                (pair["gpu"], pair["call"])).fetchone()
            assert (pair["gpu_events"], pair["gpu_ns"]) == own
            assert conn.execute(pair["evidence"]["sql"]).fetchone() == own
        a, b = gpu["window"]["start_ns"], gpu["window"]["end_ns"]
        kernels = conn.execute(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE \"end\" > ? AND start < ? AND correlationId IN "
            "(SELECT correlationId FROM CUPTI_ACTIVITY_KIND_RUNTIME)", (a, b)).fetchone()[0]
        assert sum(p["gpu_events"] for p in gpu["pairs"] if p["gpu_kind"] == "cuda_kernel") == kernels > 60000
        busy = gpu["gpu_busy"]["cuda"]
        assert busy["busy_ns"] == conn.execute(busy["evidence"]["sql"]).fetchone()[0] > 0.8 * (b - a)


def test_runs_compare_and_history_with_the_results_database(root, results_db):
    (f1, listing), (f2, compared), (f3, history), (f4, studies) = ask(root, [
        ("runs", {"kind": "run"}), ("compare", {"runs": ["kept/base", "kept/slower"]}),
        ("history", {"app": "es2gears"}), ("runs", {"kind": "study"})], db=results_db)
    assert not (f1 or f2 or f3 or f4)
    names = {entry["name"] for entry in listing["entries"]}
    assert {"es2gears", "kept/base", "kept/slower", "study/20261206T143350Z-local-posebench"} <= names
    base = next(e for e in listing["entries"] if e["name"] == "kept/base")
    written = json.loads((RUN / "summary.json").read_text())
    assert base["app"] == "es2gears" and base["valid"] is True and base["verdict"] == written["verdict"]["kind"]
    assert [s["name"] for s in studies["entries"]] == ["study"] and studies["entries"][0]["runs"] == 2
    steady = next(m for m in compared["metrics"] if m["key"] == "steady_mean_ns")
    mean = written["frames"]["steady"]["mean_ns"]
    assert steady["values"] == pytest.approx([mean, mean * 1.2])
    assert steady["deltas"][1]["pct"] == pytest.approx(20.0)
    assert compared["work"]["variants"][0]["verdict"]["verdict"] == "slower"
    assert compared["gate"]["verdicts"] and compared["gate"]["verdicts"][0]["verdict"] == "regression"
    assert history["metric"] == "steady_mean_ms" and len(history["points"]) == 15
    with sqlite3.connect(results_db) as conn:
        for point in history["points"]:
            assert conn.execute(point["evidence"]["sql"]).fetchone()[0] == pytest.approx(point["value"])


def test_names_outside_the_root_are_refused_in_one_line(root, tmp_path):
    (root / "out").symlink_to(tmp_path)
    answers = ask(root, [("summary", {"run": "../kept/base"}), ("summary", {"run": "/etc"}),
                         ("summary", {"run": "out"}), ("window", {"run": "kept/base"}),
                         ("frames", {"run": "es2gears", "frame": 99999}),
                         ("window", {"run": "es2gears", "window": "x"})])
    texts = [text for failed, text in answers]
    assert all(failed for failed, _ in answers)
    assert "not a path inside the root" in texts[0] and "not a path inside the root" in texts[1]
    assert "leads outside the root" in texts[2]
    assert "holds no report" in texts[3]
    assert "frames 0 to 2444" in texts[4]
    assert "is not START:END" in texts[5]
    assert all("\n" not in text and "Traceback" not in text for text in texts)


def test_answers_stay_within_the_bound(root):
    (failed, answer), = ask(root, [("window", {"run": "instantngp.sqlite", "window": "all", "limit": 100000})])
    assert not failed
    assert len(json.dumps(answer, separators=(",", ":"))) <= 60_000
    assert answer["rows_cut"] > 0 and answer["total_rows"] == len(answer["rows"]) + answer["rows_cut"]


def test_hostile_names_come_back_as_text(root, export, tmp_path):
    """A call named with quotes, a newline and markup: its figures found, its name unchanged, its SQL still right."""
    hostile = "glClear'); DROP TABLE StringIds;--\n<script>alert(1)</script>"
    folder = root / "hostile"
    folder.mkdir(exist_ok=True)
    shutil.copy(export("es2gears-opengl"), folder / "report.sqlite")
    with sqlite3.connect(folder / "report.sqlite") as conn:
        conn.execute("UPDATE StringIds SET value = ? WHERE value = 'glClear'", (hostile,))
    (failed, answer), = ask(root, [("window", {"run": "hostile", "window": "all", "name": "DROP TABLE",
                                               "kinds": ["opengl"]})])
    assert not failed
    row, = answer["rows"]
    assert row["name"] == hostile
    with sqlite3.connect(folder / "report.sqlite") as conn:
        assert conn.execute(row["evidence"]["sql"]).fetchone()[:2] == (row["count"], row["total_ns"])
        assert conn.execute("SELECT count(*) FROM StringIds").fetchone()[0] > 0


def test_a_runs_summary_is_a_resource_and_why_slow_a_prompt(root):
    async def read() -> tuple:
        async with Client(server_params(root)) as client:
            templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
            summary = await client.read_resource("orchestrate://runs/kept%2Fbase/summary.json")
            analysed = await client.read_resource("orchestrate://runs/es2gears/summary.json")
            page = await client.read_resource("orchestrate://runs/es2gears/report")
            prompt = await client.get_prompt("why_slow", {"run": "es2gears"})
            return templates, summary, analysed, page, prompt
    templates, summary, analysed, page, prompt = in_a_thread(read)
    assert set(templates) == {"orchestrate://runs/{name}/summary.json", "orchestrate://runs/{name}/report"}
    assert summary.contents[0].text == (RUN / "summary.json").read_text()
    assert json.loads(analysed.contents[0].text)["frames"]["count"] == 2445
    assert page.contents[0].text == f"no report page yet: orchestrate report {root / 'es2gears'}"
    text = prompt.messages[0].content.text
    assert "run=es2gears" in text and "'summary'" in text and "'window'" in text


def test_threads_lanes_and_the_gpus_busy_time_are_those_asked_for(root, export, results_db):
    """A lane named whole is that lane alone (not streams 150 to 159 for stream 15), a thread id that thread alone
    (not its process's unnamed threads), the GPU's busy time that of the window asked, a frame of a folder that
    kept no report read from its summary.json, and 'steady' a window."""
    (f1, lane), (f2, tid), (f3, gpu), (f4, kept), (f5, steady) = ask(root, [
        ("window", {"run": "instantngp.sqlite", "window": "all", "thread": "GPU 0 stream 15", "name": "kernel_grid",
                    "kinds": ["cuda_kernel"]}),
        ("window", {"run": "instantngp.sqlite", "window": "all", "thread": "754028", "name": "ioctl",
                    "kinds": ["osrt"]}),
        ("gpu_work", {"run": "instantngp.sqlite", "window": "5s:6s", "limit": 1}),
        ("frames", {"run": "kept/slower", "frame": 700, "slowest": 0}),
        ("window", {"run": "es2gears", "window": "steady", "name": "glClear", "kinds": ["opengl"]})], db=results_db)
    assert not (f1 or f2 or f3 or f4 or f5)
    with sqlite3.connect(export("instantngp_rtx3070_2021.export2022_4")) as conn:
        assert lane["rows"][0]["count"] == conn.execute(
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL AS k JOIN StringIds AS s ON s.id = k.shortName "
            "WHERE s.value = 'kernel_grid' AND k.deviceId = 0 AND k.streamId = 15").fetchone()[0]
        assert tid["rows"][0]["count"] == conn.execute(
            "SELECT count(*) FROM OSRT_API AS o JOIN StringIds AS s ON s.id = o.nameId WHERE s.value = 'ioctl' "
            "AND o.eventClass = 27 AND o.globalTid % 16777216 = 754028").fetchone()[0]
        intervals = sorted(conn.execute(
            "SELECT max(start, 5000000000), min(\"end\", 6000000000) FROM (SELECT start, \"end\" FROM "
            "CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL "
            "SELECT start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMSET) WHERE \"end\" > 5000000000 AND start < 6000000000"))
        busy, reach = 0, None
        for start, end in intervals:  # the union's length, the test's own way
            if reach is None or start > reach:
                busy, reach = busy + end - start, end
            elif end > reach:
                busy, reach = busy + end - reach, end
        cuda = gpu["gpu_busy"]["cuda"]
        assert cuda["busy_ns"] == busy == conn.execute(cuda["evidence"]["sql"]).fetchone()[0]
        assert cuda["busy_pct"] == pytest.approx(100 * busy / 1e9)
    written = json.loads((root / "kept" / "slower" / "summary.json").read_text())["frames"]
    assert kept["frame"]["duration_ns"] == written["per_frame_ns"][700]
    assert kept["frame"]["evidence"] == {"document": "summary.json", "field": "frames.per_frame_ns[700]"}
    assert "holds no report" in kept["frame"]["shares_from"]
    with sqlite3.connect(export("es2gears-opengl")) as conn:
        swaps = [row[0] for row in conn.execute(
            "SELECT a.\"end\" FROM OPENGL_API AS a JOIN StringIds AS s ON s.id = a.nameId WHERE s.value = "
            "'eglSwapBuffers' ORDER BY a.\"end\"")]
    assert steady["window"] == {"start_ns": swaps[1], "end_ns": swaps[-1]}


def test_cells_and_commits_compared(root, results_db):
    """Two cells of a study folder as the study compares them; a commit 20 % slower than the jobs of the one before
    it judged a regression, as the CI gate judges it; a compare of nothing named refused."""
    (f1, cells), (f2, commits), (f3, neither) = ask(root, [
        ("compare", {"study": "study", "cells": ["0", "delegate=none, threads=1, frames=20"]}),
        ("compare", {"app": "es2gears", "commits": ["1111111", "2222222"]}), ("compare", {})], db=results_db)
    assert not (f1 or f2) and f3 and "one of runs, study" in neither
    written = json.loads((root / "study" / "study.json").read_text())
    assert cells["cells"] == [c["label"] for c in written["cells"]]
    stored = {c["metric"]: c for c in written["comparisons"]}
    for row in cells["metrics"]:
        assert row["values"] == [c["metrics"][row["metric"]]["median"] for c in written["cells"]]
        if row["metric"] in stored:  # the study compared it (a metric 0 in both cells it leaves out)
            assert row["difference"]["verdict"] == stored[row["metric"]]["verdict"]
            assert row["difference"]["relative"] == pytest.approx(stored[row["metric"]]["relative"])
    assert len(stored) >= 5 and set(stored) <= {row["metric"] for row in cells["metrics"]}
    assert commits["verdict"] == "regression" and commits["change"] == pytest.approx(0.2, abs=0.01)
    with sqlite3.connect(results_db) as conn:
        for run in commits["evidence"]:
            assert conn.execute(run["sql"]).fetchone()[0] == pytest.approx(run["value"])
