"""The shares of a thread's time recomputed from an export with SQL and plain interval arithmetic, apart from the
analysis's own code (no numpy, no orchestrator import): what the tests hold the attribution to.

Each function takes the export, the thread (globalTid) and the spans read (the frames or the window), and returns
ns. They restate the rules of analysis/intervals/attribution.py for the share they compute, in the plainest form.
"""
from __future__ import annotations

import bisect
import sqlite3
from typing import Any

Spans = list[tuple[int, int]]
POINTS = 5.0  # the largest share within 5 points of SQL's


def frames_read(summary: Any) -> list[tuple[int, int]]:
    """The frames the attribution read, by the summary's own frame list: every k-th from the first it names."""
    found, frames = summary.attribution, summary.frames
    assert found is not None and found.first_frame is not None
    starts, lengths = frames.frame_starts_ns, frames.per_frame_ns
    picked = range(found.first_frame, found.first_frame + found.frame_count * found.sampled_every, found.sampled_every)
    return [(starts[i], starts[i] + lengths[i]) for i in picked]


def global_tid(conn: sqlite3.Connection, thread: str) -> int:
    """The globalTid of the thread the attribution names ('es2gears_x11 (7188)'), from the export's own names."""
    name, tid = thread.rsplit(" (", 1)
    [[found]] = conn.execute("SELECT DISTINCT t.globalTid FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                             "WHERE s.value = ? AND (t.globalTid & 16777215) = ?", (name, int(tid.rstrip(")"))))
    return int(found)


def pct_of(ns: int, spans: list[tuple[int, int]]) -> float:
    return ns * 100.0 / sum(end - start for start, end in spans)


SOCKET = ("poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "writev", "sendmsg", "recvmsg", "recv",
          "recvfrom", "send", "sendto")
SYNC = ("pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait", "pthread_mutex_lock",
        "pthread_mutex_timedlock", "pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_barrier_wait",
        "pthread_join", "sem_wait", "sem_timedwait", "futex")
OTHER_BLOCKING = ("nanosleep", "clock_nanosleep", "usleep", "sleep", "read", "pread64", "readv", "write", "fsync",
                  "ioctl", "open", "open64", "openat", "fopen", "fopen64", "fread", "fwrite", "waitpid", "wait4")


def merged(spans: Spans) -> Spans:
    out: Spans = []
    for start, end in sorted(spans):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def intersect(a: Spans, b: Spans) -> Spans:
    a, b, out, i, j = merged(a), merged(b), [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def length(spans: Spans) -> int:
    return sum(end - start for start, end in merged(spans))


def complement(spans: Spans, within: Spans) -> Spans:
    """The parts of ``within`` no span covers."""
    cut, out, j = merged(spans), [], 0
    for low, high in merged(within):
        cursor = low
        while j < len(cut) and cut[j][1] <= cursor:
            j += 1
        k = j
        while k < len(cut) and cut[k][0] < high:
            if cut[k][0] > cursor:
                out.append((cursor, cut[k][0]))
            cursor = max(cursor, cut[k][1])
            k += 1
        if cursor < high:
            out.append((cursor, high))
    return out


def _marks(names: tuple[str, ...]) -> str:
    return ",".join("'" + n + "'" for n in names)


def os_calls(conn: sqlite3.Connection, gtid: int, names: tuple[str, ...], inside_gl: bool | None = None) -> Spans:
    """The thread's outermost OS runtime calls of these names; only those begun inside (or outside) an OpenGL
    call of the thread when asked."""
    rows = conn.execute(f"""SELECT o.start, o."end" FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId
                            WHERE o.globalTid = ? AND o.eventClass = 27 AND coalesce(o.nestingLevel, 0) = 0
                            AND s.value IN ({_marks(names)})""", (gtid,))
    calls = [(int(s), int(e)) for s, e in rows]
    if inside_gl is None:
        return calls
    gl = sorted(api_calls(conn, "OPENGL_API", gtid))  # one thread's calls: none inside another
    starts = [s for s, _ in gl]
    kept = []
    for start, end in calls:
        at = bisect.bisect_right(starts, start) - 1
        if (at >= 0 and start < gl[at][1]) == inside_gl:
            kept.append((start, end))
    return kept


def api_calls(conn: sqlite3.Connection, table: str, gtid: int, names: tuple[str, ...] | None = None) -> Spans:
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone():
        return []
    named = f"AND nameId IN (SELECT id FROM StringIds WHERE value IN ({_marks(names)}))" if names else ""
    rows = conn.execute(f'SELECT start, "end" FROM {table} WHERE globalTid = ? {named}', (gtid,))
    return [(int(s), int(e)) for s, e in rows]


def on_cpu(conn: sqlite3.Connection, gtids: tuple[int, ...], lo: int, hi: int) -> Spans:
    """From SCHED_EVENTS: each thread on a CPU from a sched-in to its next sched-out (since lo for a thread whose
    first event is a sched-out, to hi for one whose last is a sched-in)."""
    spans: Spans = []
    for gtid in gtids:
        events = conn.execute("SELECT start, isSchedIn FROM SCHED_EVENTS WHERE globalTid = ? ORDER BY start",
                              (gtid,)).fetchall()
        for k, (at, is_in) in enumerate(events):
            if is_in and k + 1 < len(events) and not events[k + 1][1]:
                spans.append((at, events[k + 1][0]))
            elif not is_in and k == 0:
                spans.append((lo, at))
            elif is_in and k + 1 == len(events):
                spans.append((at, hi))
    return [(max(s, lo), min(e, hi)) for s, e in spans if min(e, hi) > max(s, lo)]


def thread_ids(conn: sqlite3.Connection, pattern: str, pid_of: int | None = None) -> tuple[int, ...]:
    rows = conn.execute("SELECT t.globalTid FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
                        "WHERE s.value GLOB ?", (pattern,))
    return tuple(int(r[0]) for r in rows if pid_of is None or (int(r[0]) >> 24) & 0xFFFFFF == pid_of)


GL_WAITS = ("glFinish", "glClientWaitSync", "eglClientWaitSync", "eglClientWaitSyncKHR", "glWaitSync",
            "glGetQueryObjectuiv", "glGetQueryObjectui64v")


def off_cpu(conn: sqlite3.Connection, gtid: int, spans: Spans) -> Spans:
    """The spans' time the thread was off a CPU (context switches)."""
    lo, hi = min(s for s, _ in spans), max(e for _, e in spans)
    return complement(on_cpu(conn, (gtid,), lo, hi), spans)


def display_ns(conn: sqlite3.Connection, gtid: int, spans: Spans) -> int:
    """Off a CPU in a socket call begun inside one of the thread's OpenGL (EGL, GLX) calls: blocked on the display
    server (the copy into its socket, on a CPU, is running), outside the calls that only wait for the GPU."""
    blocked = intersect(os_calls(conn, gtid, SOCKET, inside_gl=True), off_cpu(conn, gtid, spans))
    return length(complement(api_calls(conn, "OPENGL_API", gtid, GL_WAITS), blocked))


def renderer_wait_ns(conn: sqlite3.Connection, gtid: int, spans: Spans) -> int:
    """Inside an OpenGL call that only waits for the GPU (on a CPU or off), or off a CPU in any other OpenGL call
    outside a display one, while a software renderer's threads (llvmpipe-N of the same process) run on a CPU or the
    GPU work nsys recorded runs (llvmpipe's compute dispatches run on threads without a name, and nsys times them as
    GPU work)."""
    lo, hi = min(s for s, _ in spans), max(e for _, e in spans)
    pid = (gtid >> 24) & 0xFFFFFF
    gl = api_calls(conn, "OPENGL_API", gtid)
    waits = intersect(api_calls(conn, "OPENGL_API", gtid, GL_WAITS), spans)
    display = os_calls(conn, gtid, SOCKET, inside_gl=True)
    busy = on_cpu(conn, thread_ids(conn, "llvmpipe-*", pid), lo, hi) + [
        (int(s), int(e)) for s, e in conn.execute('SELECT start, "end" FROM OPENGL_WORKLOAD')]
    blocked = complement(display + waits, intersect(intersect(gl, busy), off_cpu(conn, gtid, spans)))
    return length(waits) + length(blocked)


def running_ns(conn: sqlite3.Connection, gtid: int, spans: Spans) -> int:
    """On a CPU (context switches), inside a call or not, outside the calls that only wait for the GPU."""
    lo, hi = min(s for s, _ in spans), max(e for _, e in spans)
    ran = intersect(on_cpu(conn, (gtid,), lo, hi), spans)
    return length(complement(api_calls(conn, "OPENGL_API", gtid, GL_WAITS), ran))


def cuda_wait_ns(conn: sqlite3.Connection, gtid: int, spans: Spans, min_call_ns: int = 20_000) -> int:
    """CUDA calls of the thread while the GPU runs the work that call queued (same correlationId), and the
    synchronising calls while any GPU work runs."""
    tables = [t for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
              if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone()]
    gpu = " UNION ALL ".join(f'SELECT correlationId, start, "end" FROM {t}' for t in tables)
    own = conn.execute(f"""
        SELECT max(r.start, w.start), min(r."end", w."end") FROM CUPTI_ACTIVITY_KIND_RUNTIME r
        JOIN ({gpu}) w ON w.correlationId = r.correlationId
        WHERE r.globalTid = ? AND r."end" - r.start >= {min_call_ns}""", (gtid,)).fetchall()
    work = [(int(s), int(e)) for _, s, e in conn.execute(gpu)]
    syncs = [(int(s), int(e)) for s, e in conn.execute(
        """SELECT r.start, r."end" FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId
           WHERE r.globalTid = ? AND (s.value GLOB 'cu*Synchronize*' OR s.value GLOB 'cudaMemcpy_v*'
           OR s.value GLOB 'cuMemcpyDtoH_v*' OR s.value GLOB 'cuMemcpyHtoD_v*')""", (gtid,))]
    return length(intersect([(int(s), int(e)) for s, e in own if e > s] + intersect(syncs, work), spans))
