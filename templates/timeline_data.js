// The whole-run timeline's data (report/run_timeline.py writes it; that module's words give the layout): base64
// of zlib'd binaries, inflated by the browser's own DecompressionStream, decoded into typed arrays per row.
// Pure: no page, no drawing (templates/timeline.js draws it).
var orchestrateTimelineData = (function () {
  "use strict";
  var ESCAPE = 0xFFFFFFFF, NESTING = {nvtx: true, opengl: true, cuda_api: true, osrt: true};

  function bytesOf(text) {
    if (Uint8Array.fromBase64) { return Uint8Array.fromBase64(text); }
    var binary = atob(text), bytes = new Uint8Array(binary.length);
    for (var i = 0; i < binary.length; i++) { bytes[i] = binary.charCodeAt(i); }
    return bytes;
  }

  function inflate(bytes) {
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).arrayBuffer();
  }

  function reader(buffer, offset) {
    var read = {offset: offset};
    read.u32 = function (n) {  // byte-planed: n lowest bytes, n second bytes, n third, n highest
      var b = new Uint8Array(buffer, read.offset, 4 * n), a = new Uint32Array(n), n2 = 2 * n, n3 = 3 * n;
      for (var i = 0; i < n; i++) { a[i] = (b[i] | b[n + i] << 8 | b[n2 + i] << 16 | b[n3 + i] << 24) >>> 0; }
      read.offset += 4 * n;
      return a;
    };
    read.u8 = function (n) { var a = new Uint8Array(buffer, read.offset, n); read.offset += n + (4 - n % 4) % 4; return a; };
    read.f64 = function (n) {  // copied: a Float64Array must start 8-byte aligned
      var a = new Float64Array(buffer.slice(read.offset, read.offset + 8 * n));
      read.offset += 8 * n;
      return a;
    };
    return read;
  }

  function unescaper(escapes) {
    var next = 0;
    return function (v) { return v === ESCAPE ? escapes[next++] : v; };
  }

  // a row's events from their deltas and durations: starts, ends, their lanes (each event in the first lane free
  // at its start), and the furthest end so far of the short ones (their self times: threadSelves, once every row of
  // their thread is read). Events longer than a 256th of the run (an NVTX
  // range around the whole app, a thread's long wait) are kept apart in "long": otherwise one of them would hold
  // the furthest end, and every view after its start would begin its search at it.
  // (a row of CPU samples holds its samples' stack nodes where other rows hold names: each is named by its node's
  // frame, its leaf, and keeps its node in row.stacks)
  function setEvents(row, deltas, durations, names, value, stackFrames, nameCount) {
    var n = deltas.length, starts = new Float64Array(n), ends = new Float64Array(n), reach = new Float64Array(n);
    var depths = new Uint8Array(n), laneEnds = [], long = [], at = 0, furthest = -Infinity, i, d;
    var longest = row.span / 256;
    for (i = 0; i < row.lanes; i++) { laneEnds.push(-Infinity); }
    for (i = 0; i < n; i++) { at += value(deltas[i]); starts[i] = at; }
    for (i = 0; i < n; i++) {
      ends[i] = starts[i] + value(durations[i]);
      if (ends[i] - starts[i] > longest) { long.push(i); } else { furthest = Math.max(furthest, ends[i]); }
      reach[i] = furthest;
      for (d = 0; d < row.lanes - 1 && laneEnds[d] > starts[i]; d++) { /* the first lane free at its start */ }
      depths[i] = d;
      laneEnds[d] = Math.max(laneEnds[d], ends[i]);
    }
    row.starts = starts;
    row.ends = ends;
    row.self = null;
    row.reach = reach;
    row.long = long;
    row.depths = depths;
    if (row.kind === "sample" && stackFrames.length) {
      row.stacks = names;
      row.names = new Uint32Array(n);
      for (i = 0; i < n; i++) { row.names[i] = stackFrames[names[i]]; }
    } else {
      row.names = names;
    }
    var counts = new Uint32Array(nameCount);  // the events of each name, for search's count over the run
    for (i = 0; i < n; i++) { counts[row.names[i]]++; }
    row.nameCounts = counts;
    row.loaded = true;
  }

  // each call's and NVTX range's self time: its time less that of the events directly inside it on its thread,
  // whatever row draws them (an OS call inside eglSwapBuffers sits on the OS runtime row), clipped to it where they
  // cross its end. The thread's rows of calls and ranges are merged by start (of equal starts the longest first:
  // the enclosing one), each event's parent the latest one still open at its start, as span_stats.py has it. Done
  // once per thread, when every row of it is read (GPU work overlaps, never nests: it has none).
  function threadSelves(data) {
    var threads = {};
    data.rows.forEach(function (row) {
      if (NESTING[row.kind]) { (threads[row.group] = threads[row.group] || []).push(row); }
    });
    Object.keys(threads).forEach(function (group) {
      var rows = threads[group];
      if (rows.some(function (row) { return !row.loaded; }) || rows[0].self) { return; }
      var total = 0, at = rows.map(function () { return 0; });
      rows.forEach(function (row) { row.self = new Float64Array(row.count); total += row.count; });
      var stackRow = new Int32Array(total), stackIndex = new Int32Array(total), depth = 0;
      for (var k = 0; k < total; k++) {
        var r = -1;
        for (var j = 0; j < rows.length; j++) {  // the next event by start, the longest first
          var i = at[j];
          if (i >= rows[j].count) { continue; }
          if (r < 0 || rows[j].starts[i] < rows[r].starts[at[r]] ||
              (rows[j].starts[i] === rows[r].starts[at[r]] && rows[j].ends[i] > rows[r].ends[at[r]])) { r = j; }
        }
        var row = rows[r], e = at[r]++, start = row.starts[e], end = row.ends[e];
        row.self[e] = end - start;
        while (depth && rows[stackRow[depth - 1]].ends[stackIndex[depth - 1]] <= start) { depth--; }
        if (depth) {
          var parent = rows[stackRow[depth - 1]], p = stackIndex[depth - 1];
          parent.self[p] -= Math.min(end, parent.ends[p]) - start;
        }
        stackRow[depth] = r;
        stackIndex[depth++] = e;
      }
    });
  }

  function parse(buffer) {
    var length = new DataView(buffer).getUint32(0, true);
    var header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 4, length)));
    var read = reader(buffer, 4 + length), offset = 0;
    var stacks = {parents: read.u32(header.stacks || 0), frames: read.u32(header.stacks || 0)};
    var rows = header.rows.map(function (meta) {
      var row = {group: meta.group, kind: meta.kind, count: meta.count, lanes: meta.lanes, detail: meta.detail, process: meta.process,
                 span: header.span, loaded: false, starts: new Float64Array(0), ends: new Float64Array(0),
                 reach: new Float64Array(0), long: [], self: null, stacks: null, nameCounts: new Uint32Array(0),
                 offset: offset};
      offset += meta.count;
      var events = meta.detail ? null : [read.u32(meta.count), read.u32(meta.count), read.u32(meta.count)];
      var runs = meta.levels.map(function (level) {
        return {width: level.width, deltas: read.u32(level.runs), lengths: read.u32(level.runs),
                values: read.u8(level.runs)};
      });
      var value = unescaper(read.f64(meta.escapes));
      if (events) { setEvents(row, events[0], events[1], events[2], value, stacks.frames, header.names.length); }
      row.levels = runs.map(function (level) {
        var m = level.values.length, first = new Float64Array(m), last = new Float64Array(m), bin = 0;
        for (var j = 0; j < m; j++) { bin += value(level.deltas[j]); first[j] = bin; }
        for (j = 0; j < m; j++) { last[j] = first[j] + value(level.lengths[j]); }
        return {width: level.width, first: first, last: last, values: level.values};
      });
      return row;
    });
    return {header: header, rows: rows, links: null, stacks: stacks};
  }

  // the names of a stack node's frames, leaf first
  function stackOf(data, node) {
    var found = [], parents = data.stacks.parents, frames = data.stacks.frames;
    for (var k = 0; node >= 0 && node < frames.length && k < frames.length; k++) {
      found.push(data.header.names[frames[node]]);
      node = parents[node] - 1;
    }
    return found;
  }

  // the events of the rows with levels (parse's data: header and rows), from the detail binary
  function parseDetail(buffer, data) {
    var read = reader(buffer, 0);
    data.rows.forEach(function (row, index) {
      if (!row.detail) { return; }
      var n = row.count, deltas = read.u32(n), durations = read.u32(n), names = read.u32(n);
      setEvents(row, deltas, durations, names, unescaper(read.f64(data.header.rows[index].detail_escapes)),
                data.stacks.frames, data.header.names.length);
    });
    var n = data.header.links || 0, first = new Float64Array(n), last = new Float64Array(n), at = 0;
    if (n) {
      var deltas = read.u32(n), lengths = read.u32(n), steps = read.u32(n), gpu = new Uint32Array(n), g = 0;
      for (var k = 0; k < n; k++) {
        at += deltas[k];
        first[k] = at;
        last[k] = at + lengths[k];
        g += steps[k] & 1 ? -(steps[k] + 1) / 2 : steps[k] / 2;  // zigzag
        gpu[k] = g;
      }
      var byGpu = Array.from(gpu.keys()).sort(function (a, b) { return gpu[a] - gpu[b]; });
      var reach = new Float64Array(n), furthest = -1;  // the furthest last place of the stretches so far
      for (k = 0; k < n; k++) { furthest = Math.max(furthest, last[k]); reach[k] = furthest; }
      data.links = {first: first, last: last, reach: reach, gpu: gpu, byGpu: Uint32Array.from(byGpu)};
    }
  }

  // the first index whose value in (ascending) array is > t, or >= t with orEqual
  function search(array, t, orEqual) {
    var lo = 0, hi = array.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (array[mid] < t || (!orEqual && array[mid] === t)) { lo = mid + 1; } else { hi = mid; }
    }
    return lo;
  }

  // the links of one event by its place among all rows' events: those whose API stretch holds it (back from the
  // last stretch that starts at or before it, while some stretch so far reaches it; one call may queue many
  // kernels) and those whose GPU event it is
  function linksOf(data, place) {
    var links = data.links, found = [], k;
    if (!links) { return found; }
    for (k = search(links.first, place, false) - 1; k >= 0 && links.reach[k] >= place; k--) {
      if (links.last[k] >= place) { found.push(k); }
    }
    var lo = 0, hi = links.byGpu.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (links.gpu[links.byGpu[mid]] < place) { lo = mid + 1; } else { hi = mid; }
    }
    for (k = lo; k < links.byGpu.length && links.gpu[links.byGpu[k]] === place; k++) { found.push(links.byGpu[k]); }
    return found;
  }

  // the row (its index) and the event's index in it, of a place among all rows' events
  function rowOf(data, place) {
    var lo = 0, hi = data.rows.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (data.rows[mid].offset <= place) { lo = mid + 1; } else { hi = mid; }
    }
    return [lo - 1, place - data.rows[lo - 1].offset];
  }

  return {bytesOf: bytesOf, inflate: inflate, parse: parse, parseDetail: parseDetail, search: search, threadSelves: threadSelves,
          linksOf: linksOf, rowOf: rowOf, stackOf: stackOf};
}());
