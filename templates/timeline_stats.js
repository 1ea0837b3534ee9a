// A selected span's statistics per name on the whole-run timeline: count, total, self, mean, min, max and the
// durations' histogram of each (kind, name), as SQL gives them over the span, and the selected samples' heaviest
// stacks. Pure: data in (templates/timeline_data.js's), figures out. A row of many calls also keeps each block of
// BLOCK events summed per name (summarize, once its events are read), so that a span over most of the run adds
// up its whole blocks rather than every event: the events at the span's edges are read one by one.
var orchestrateTimelineStats = (function () {
  "use strict";
  var tools = orchestrateTimelineTools, search = orchestrateTimelineData.search, binOf = tools.binOf;
  var BINS = tools.BINS, BLOCK = 16384, STACKS_SHOWN = 8;

  // one kind's figures per name, in typed arrays indexed by the name
  function figures(n) {
    return {counts: new Float64Array(n), totals: new Float64Array(n), selves: new Float64Array(n),
            mins: new Float64Array(n).fill(Infinity), maxes: new Float64Array(n).fill(-Infinity),
            bins: new Uint32Array(n * BINS), used: new Uint8Array(n)};
  }

  // events [lo, hi) of a row added into f, each one (own: their self times where they nest)
  function addEach(row, f, lo, hi, a) {
    var starts = row.starts, ends = row.ends, own = row.self, keys = row.names, counts = f.counts, totals = f.totals;
    var selves = f.selves, mins = f.mins, maxes = f.maxes, bins = f.bins, used = f.used;
    for (var i = lo; i < hi; i++) {
      if (ends[i] <= a) { continue; }
      var key = keys[i], d = ends[i] - starts[i];
      counts[key]++;
      used[key] = 1;
      totals[key] += d;
      if (own) { selves[key] += own[i] - d; }  // self time kept as what nesting takes off the total
      if (d < mins[key]) { mins[key] = d; }
      if (d > maxes[key]) { maxes[key] = d; }
      bins[key * BINS + binOf(d)]++;
    }
  }

  // each whole block of a row's events summed per name: the names it holds and their figures (compact)
  function summarize(row, nameCount) {
    if (row.kind === "sample" || row.count < 4 * BLOCK) { row.blocks = null; return; }
    var blocks = [], f = figures(nameCount);  // one scratch for every block: what a block used is reset after it
    for (var lo = 0; lo + BLOCK <= row.count; lo += BLOCK) {
      var keys = [];
      addEach(row, f, lo, lo + BLOCK, -Infinity);
      for (var k = 0; k < nameCount; k++) { if (f.used[k]) { keys.push(k); } }
      var m = keys.length, block = {keys: keys, counts: new Float64Array(m), totals: new Float64Array(m),
                                    selves: new Float64Array(m), mins: new Float64Array(m), maxes: new Float64Array(m),
                                    bins: new Uint32Array(m * BINS)};
      keys.forEach(function (key, j) {
        block.counts[j] = f.counts[key];
        block.totals[j] = f.totals[key];
        block.selves[j] = f.selves[key];
        block.mins[j] = f.mins[key];
        block.maxes[j] = f.maxes[key];
        block.bins.set(f.bins.subarray(key * BINS, (key + 1) * BINS), j * BINS);
        f.counts[key] = f.totals[key] = f.selves[key] = f.used[key] = 0;
        f.mins[key] = Infinity;
        f.maxes[key] = -Infinity;
        f.bins.fill(0, key * BINS, (key + 1) * BINS);
      });
      blocks.push(block);
    }
    row.blocks = blocks;
  }

  function addBlock(block, f) {
    block.keys.forEach(function (key, j) {
      f.counts[key] += block.counts[j];
      f.used[key] = 1;
      f.totals[key] += block.totals[j];
      f.selves[key] += block.selves[j];
      f.mins[key] = Math.min(f.mins[key], block.mins[j]);
      f.maxes[key] = Math.max(f.maxes[key], block.maxes[j]);
      for (var b = 0; b < BINS; b++) { f.bins[key * BINS + b] += block.bins[j * BINS + b]; }
    });
  }

  // per (kind, name), the events of the given rows in [a, b) (as SQL: end > a and start < b): count, total, self
  // (less what nests in them on their row), mean, min, max, and their durations' bins (binOf); samples
  // are counted only, and their stacks (the heaviest in "stacks"). Heaviest first.
  function rangeStats(data, rowIndexes, a, b) {
    var perKind = {}, unread = 0, names = data.header.names, n = names.length;
    var stackCounts = new Uint32Array(data.stacks ? data.stacks.frames.length : 0);
    rowIndexes.forEach(function (r) {
      var row = data.rows[r];
      if (!row.loaded) { unread++; return; }
      var f = perKind[row.kind] || (perKind[row.kind] = figures(n)), s = tools.stretch(row, a, b), i;
      if (row.kind === "sample") {  // instants: counted, with their stacks
        for (i = s.lo; i < s.hi; i++) {
          if (row.starts[i] < a) { continue; }
          f.counts[row.names[i]]++;
          f.used[row.names[i]] = 1;
          if (row.stacks) { stackCounts[row.stacks[i]]++; }
        }
        return;
      }
      s.before.forEach(function (k) { addEach(row, f, k, k + 1, a); });
      // from the first event that starts after a, every event up to hi overlaps the span: whole blocks summed
      var after = Math.max(s.lo, search(row.starts, a, false));
      var first = row.blocks ? Math.ceil(after / BLOCK) : 0, last = row.blocks ? Math.floor(s.hi / BLOCK) : 0;
      if (first >= last) {
        addEach(row, f, s.lo, s.hi, a);
        return;
      }
      addEach(row, f, s.lo, first * BLOCK, a);
      for (var k = first; k < last; k++) { addBlock(row.blocks[k], f); }
      addEach(row, f, last * BLOCK, s.hi, a);
    });
    var found = [];
    Object.keys(perKind).forEach(function (kind) {
      var f = perKind[kind], sample = kind === "sample";
      for (var key = 0; key < n; key++) {
        if (!f.used[key]) { continue; }
        var count = f.counts[key];
        found.push({kind: kind, name: names[key], count: count, total: sample ? null : f.totals[key],
                    self: sample ? null : f.totals[key] + f.selves[key], mean: sample ? null : f.totals[key] / count,
                    min: sample ? null : f.mins[key], max: sample ? null : f.maxes[key],
                    bins: f.bins.subarray(key * BINS, (key + 1) * BINS)});
      }
    });
    found.sort(function (x, y) { return (y.total || 0) - (x.total || 0) || y.count - x.count; });
    return {stats: found, unread: unread, stacks: heaviestStacks(data, stackCounts)};
  }

  // the selected samples' stacks with the most samples ({count, frames: leaf first}), heaviest first; ties in
  // order of their nodes
  function heaviestStacks(data, counts) {
    var nodes = [], total = 0;
    for (var k = 0; k < counts.length; k++) { if (counts[k]) { nodes.push(k); total += counts[k]; } }
    nodes.sort(function (x, y) { return counts[y] - counts[x] || x - y; });
    return nodes.slice(0, STACKS_SHOWN).map(function (node) {
      return {count: counts[node], share: counts[node] / total, frames: orchestrateTimelineData.stackOf(data, node)};
    });
  }

  // the statistics as tab-separated values, times in ns
  function tsv(stats) {
    var lines = ["kind\tname\tcount\ttotal_ns\tself_ns\tmean_ns\tmin_ns\tmax_ns"];
    stats.forEach(function (e) {
      var cells = [e.kind, e.name.replace(/[\t\r\n]/g, " "), e.count].concat(
        [e.total, e.self, e.mean, e.min, e.max].map(function (v) { return v === null ? "" : String(Math.round(v)); }));
      lines.push(cells.join("\t"));
    });
    return lines.join("\n") + "\n";
  }

  return {rangeStats: rangeStats, summarize: summarize, tsv: tsv, BLOCK: BLOCK};
}());
