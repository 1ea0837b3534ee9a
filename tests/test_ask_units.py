"""The MCP server's pure parts: self times as the page's script has them, answers cut to the bound, names kept
inside the root, and span figures against SQL on a real export's random spans."""
from __future__ import annotations

import json
import random
import sqlite3

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.analysis.analyzers.run_events import run_events
from orchestrator.analysis.analyzers.span_stats import chosen_rows, self_times, span_stats
from orchestrator.analysis.export.schema import probe
from orchestrator.analysis.export.trace import Trace
from orchestrator.ask.bounds import bounded, size
from orchestrator.ask.root import Root
from orchestrator.ask.sql import self_sql, span_sql
from orchestrator.errors import UsageError


def brute_self(starts: list[int], ends: list[int]) -> list[int]:
    """Each event less its direct children's time, a child's parent being the latest earlier event open at its
    start (the page's rule), found the slow way."""
    own = [e - s for s, e in zip(starts, ends)]
    for i in range(len(starts)):
        parents = [j for j in range(i) if ends[j] > starts[i]]
        if parents:
            p = max(parents)
            own[p] -= min(ends[i], ends[p]) - starts[i]
    return own


@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 300)), max_size=40))
def test_self_times_follow_the_pages_rule(pairs):
    events = sorted(((s, s + d) for s, d in pairs), key=lambda e: (e[0], -e[1]))
    starts = np.array([s for s, _ in events], dtype=np.int64)
    ends = np.array([e for _, e in events], dtype=np.int64)
    assert self_times(starts, ends).tolist() == brute_self(starts.tolist(), ends.tolist())


def test_an_answer_over_the_bound_keeps_its_first_items_and_says_how_many_went():
    answer = {"run": "r", "rows": [{"name": f"call{i}", "sql": "x" * 500} for i in range(400)],
              "tree": {"children": [{"name": "a" * 100}] * 50}}
    cut = bounded(json.loads(json.dumps(answer)), 20_000)
    assert size(cut) <= 20_000
    kept = len(cut["rows"])
    assert 0 < kept < 400 and cut["rows_cut"] == 400 - kept
    assert [r["name"] for r in cut["rows"]] == [f"call{i}" for i in range(kept)]
    small = {"rows": [1, 2, 3]}
    assert bounded(small) == {"rows": [1, 2, 3]}


def test_names_stay_inside_the_root(tmp_path):
    root_dir = tmp_path / "runs"
    (root_dir / "a" / "b").mkdir(parents=True)
    (tmp_path / "secret").mkdir()
    (root_dir / "link").symlink_to(tmp_path / "secret")
    root = Root(root_dir)
    assert root.resolve("a/b") == (root_dir / "a" / "b").resolve()
    assert root.resolve("") == root_dir.resolve()
    for name, said in (("../secret", "not a path inside"), ("/etc", "not a path inside"), ("a/../../secret",
                       "not a path inside"), ("link", "leads outside"), ("nothing", "no such run"),
                       ("a\\..\\..\\secret", "not a path inside")):
        with pytest.raises(UsageError, match=said):
            root.resolve(name)
    with pytest.raises(UsageError, match="no such folder"):
        Root(tmp_path / "none")
    (root_dir / "a" / "b" / "run.json").write_text("{}")
    (tmp_path / "secret" / "summary.json").write_text("{}")
    (root_dir / "a" / "b" / "summary.json").symlink_to(tmp_path / "secret" / "summary.json")
    with pytest.raises(UsageError, match="holds summary.json, which leads outside the root"):
        root.run("a/b")


def test_span_figures_equal_their_sql_on_random_spans(export):
    """Every row of random spans of a real export: the SQL the answer carries gives its figures."""
    path = export("tflite-pose-xnnpack")
    conn = sqlite3.connect(path)
    try:
        schema = probe(conn)
        events = run_events(Trace(conn, schema, path))
        rows = chosen_rows(events, kinds=("osrt", "nvtx", "opengl", "sample"))
        low = min(int(r.starts[0]) for r in events.rows if len(r.starts))
        high = max(int(r.ends.max()) for r in events.rows if len(r.starts))
        chooser = random.Random(55)
        checked = 0
        for _ in range(4):
            a = chooser.randrange(low, high)
            span = (a, a + chooser.randrange(10**6, 10**9))
            for stat in span_stats(events, span, rows):
                figures = conn.execute(span_sql(stat.kind, stat.name, span, stat.keys, schema)).fetchone()
                if stat.kind == "sample":
                    assert figures[0] == stat.count, stat.name
                    continue
                assert figures[:4] == (stat.count, stat.total_ns, stat.min_ns, stat.max_ns), stat.name
                own = self_sql(stat.kind, stat.name, span, stat.keys, schema)
                assert own is not None and conn.execute(own).fetchone()[0] == stat.self_ns
                checked += 1
        assert checked > 10
    finally:
        conn.close()
