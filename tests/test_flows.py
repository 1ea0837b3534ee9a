"""The links from an API call to the GPU work it queued (analysis/analyzers/flows.py) against SQL on real exports: a
CUDA kernel, copy or set to the runtime call with its correlation id, an OpenGL workload to the calls from its first
correlation id to its last; and the page's binary carrying them (read back as the page reads it)."""
from __future__ import annotations

import numpy as np
from test_run_events import events_of, read_back

from orchestrator.analysis.analyzers.flows import Flows, flows, offsets
from orchestrator.analysis.analyzers.run_events import EventRow
from orchestrator.report.run_timeline import timeline_data


def located(rows: list[EventRow], places: np.ndarray) -> list[tuple[EventRow, int]]:
    at = offsets(rows)
    found = []
    for place in places.tolist():
        r = int(np.searchsorted(at, place, side="right")) - 1
        found.append((rows[r], place - int(at[r])))
    return found


def test_each_cuda_kernel_copy_and_set_links_to_the_runtime_call_sql_joins_it_to(export):
    events, conn = events_of(export("flux_gtx1650_2019.export2022_4"))
    try:
        links = flows(events.rows)
        expected = []
        for table in ("KERNEL", "MEMCPY", "MEMSET"):
            for gpu_start, gpu_end, call_start, call_end in conn.execute(
                    f'SELECT g.start, g."end", r.start, r."end" FROM CUPTI_ACTIVITY_KIND_{table} AS g '
                    'JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = g.correlationId '
                    'AND (r.globalTid >> 24) = (g.globalPid >> 24)'):
                expected.append(((gpu_start, gpu_end), (call_start, call_end)))
    finally:
        conn.close()
    assert len(links) == len(expected) > 6000
    assert (links.first == links.last).all()  # a CUDA call queues its own work: one call each
    got = []
    for (gpu_row, g), (api_row, a) in zip(located(events.rows, links.gpu), located(events.rows, links.first)):
        assert gpu_row.kind in ("cuda_kernel", "memcpy") and api_row.kind == "cuda_api"
        assert gpu_row.correlation[g] == api_row.correlation[a]
        got.append(((int(gpu_row.starts[g]), int(gpu_row.ends[g])), (int(api_row.starts[a]), int(api_row.ends[a]))))
    assert sorted(got) == sorted(expected)


def test_an_opengl_workload_links_to_every_call_from_its_first_correlation_id_to_its_last(export):
    events, conn = events_of(export("es2gears-opengl"))
    try:
        links = flows(events.rows)
        workloads = conn.execute("SELECT start, correlationId, endCorrelationId FROM OPENGL_WORKLOAD").fetchall()
        calls = dict(conn.execute("SELECT correlationId, count(*) FROM OPENGL_API WHERE correlationId > 0 "
                                  "GROUP BY correlationId").fetchall())
    finally:
        conn.close()
    by_start: dict[int, int] = {}
    for (gpu_row, g), first, last in zip(located(events.rows, links.gpu), links.first.tolist(), links.last.tolist()):
        assert gpu_row.kind == "opengl_gpu"
        by_start[int(gpu_row.starts[g])] = by_start.get(int(gpu_row.starts[g]), 0) + last - first + 1
        (api_row, a), (same_row, b) = located(events.rows, np.array([first, last]))
        assert api_row is same_row and api_row.kind == "opengl"
        ids = api_row.correlation[a:b + 1]
        assert ((ids >= gpu_row.correlation[g]) & (ids <= gpu_row.correlation_last[g])).all()
    # every call SQL finds in a workload's span of ids is linked to it, no other
    expected = {start: sum(calls.get(c, 0) for c in range(first, last + 1)) for start, first, last in workloads}
    assert by_start == {start: n for start, n in expected.items() if n}
    assert len(by_start) == len(workloads) == 2570


def test_the_page_binary_carries_the_links(export):
    events, conn = events_of(export("flux_gtx1650_2019.export2022_4"))
    conn.close()
    data = timeline_data(events, [], [])
    header, _ = read_back(data)
    gpu, first, last = header["flows"]
    links = flows([row for row in events.rows if len(row.starts)])
    assert header["links"] == len(links) > 0
    assert gpu.tolist() == links.gpu.tolist() and first.tolist() == links.first.tolist()
    assert last.tolist() == links.last.tolist()


def test_rows_without_correlation_ids_have_no_links():
    starts = np.arange(10, dtype=np.int64) * 100
    rows = [EventRow("app (1)", "osrt", starts, starts + 50, np.zeros(10, dtype=np.int32)),
            EventRow("GPU 0 stream 7", "cuda_kernel", starts, starts + 20, np.zeros(10, dtype=np.int32))]
    assert len(flows(rows)) == 0 and isinstance(flows(rows), Flows)
