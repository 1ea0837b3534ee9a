// The whole-run timeline's figures, apart from its drawing and its page: times as text, the axis's ticks, a
// name's colour, the events of a row in a span, search, a span's statistics per name, and the links from a call
// to the GPU work it queued. Pure: data in (templates/timeline_data.js's), numbers and text out. The types below are
// the timeline's own, checked by tsc --checkJs (templates/tsconfig.json).

/**
 * The view's mapping between time and the canvas: made once per paint (and per input), the one place where a time
 * becomes a pixel and a pixel a time.
 * @typedef {Object} View
 * @property {number} t0 the view's first ns, from the origin
 * @property {number} t1 its end
 * @property {number} left the plot's left edge, in CSS pixels (the row labels' width)
 * @property {number} width the plot's width, in CSS pixels
 * @property {number} nsPerPx ns per CSS pixel
 * @property {function(number): number} x a time's pixel
 * @property {function(number): number} t a pixel's time
 */

/**
 * The timeline's state (templates/timeline.js): what the page shows and what the user did.
 * @typedef {Object} TimelineState
 * @property {any} data the run's events, once read (timeline_data.js's parse), else null
 * @property {number} t0 the view's first ns, from the origin
 * @property {number} t1 the view's end
 * @property {number} origin the report's clock at the data's 0
 * @property {number} LABEL_W the row labels' width, in CSS pixels
 * @property {number} AXIS_H the time axis's height
 * @property {Array<any>} layout each row's place (type, y, h, row) on the canvas, top down
 * @property {Array<any>} placeOfRow each data row's place in layout
 * @property {Float64Array} frameStarts each frame's start, for a search by time
 * @property {?Array<number>} pointer the pointer's [x, y] on the canvas, or null
 * @property {?Object} search the query, its matches and the one stepped to
 * @property {?Object} selection the span selected over some rows, and its figures
 * @property {?Object} selecting the span being dragged out
 * @property {?{row: number, index: number}} selected the event picked
 * @property {Array<any>} flows the picked call's links to its GPU work
 * @property {RowState} rowState the rows pinned and folded (timeline_rows.js)
 * @property {?number} linkFrame the frame the view was fitted to, while it shows it (the page's link names it)
 */

/**
 * What the user did to the whole-run timeline's rows (timeline_rows.js lays them out by it; the page's link keeps it).
 * @typedef {Object} RowState
 * @property {Array<number>} pins the pinned rows' indexes, in the order they were pinned
 * @property {Array<number>} folds the folded processes' indexes
 * @property {Array<string>} hiddenKinds the kinds whose rows are hidden
 * @property {boolean} hideEmpty rows with nothing in view left out
 */

/**
 * A view of the run as a link's fragment says it:
 * "#window=Ss:Es&select=Ss:Es&frame=N&search=TEXT&pin=R.R&fold=P.P&hide=K.K&empty=hide&rows=R.R" (each part optional; times in seconds on the report's clock, as the page prints them and --window takes them). Frame links and shared
 * views both use this one format.
 * @typedef {Object} ViewLink
 * @property {?Array<number>} window [start, end] in ns on the report's clock
 * @property {?Array<number>} selection [start, end] in ns on the report's clock
 * @property {?number} frame a frame's index
 * @property {?string} search the search box's text
 * @property {?Array<number>} [pins] the pinned rows (indexes in the page's data), in the order they are pinned
 * @property {?Array<number>} [folds] the folded processes (indexes in the page's list of them)
 * @property {?Array<string>} [hiddenKinds] the kinds whose rows are hidden ("osrt", "sample"...)
 * @property {?Array<number>} [selectionRows] the rows the selection is over, when not every row shown
 * @property {?boolean} [hideEmpty] rows with nothing in view hidden
 */

var orchestrateTimelineTools = (function () {
  "use strict";
  var codec = orchestrateTimelineData, search = codec.search;
  var API_KINDS = {opengl: true, cuda_api: true};
  var BINS = 82;  // durations' bins: half an octave each ([4, 6), [6, 8) ns...) from 1 ns to 2^40 ns (18 minutes)
  var MAX_FLOWS = 256;
  var MIN_SPAN = 1000;  // the narrowest view, in ns

  function duration(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) { return (ns / 1e9).toFixed(a >= 1e10 ? 2 : 3) + " s"; }
    if (a >= 1e6) { return (ns / 1e6).toFixed(a >= 1e7 ? 2 : 3) + " ms"; }
    if (a >= 1e3) { return (ns / 1e3).toFixed(a >= 1e4 ? 1 : 2) + " \u00b5s"; }
    return ns.toFixed(0) + " ns";
  }

  // ns on the report's clock as seconds, to the ns
  function seconds(ns) { return (ns / 1e9).toFixed(9).replace(/0{1,3}$/, "").replace(/0{1,3}$/, ""); }

  /** @type {Array<[number, string]>} */
  var UNITS = [[1e9, "s"], [1e6, "ms"], [1e3, "\u00b5s"], [1, "ns"]];

  /** @param {string} text "Ss:Es" in seconds @returns {?Array<number>} [start, end] in ns, or null */
  function spanOf(text) {
    var parts = /^(\d+(?:\.\d+)?)s?:(\d+(?:\.\d+)?)s?$/.exec(text || "");
    if (!parts) { return null; }
    var a = Math.round(parseFloat(parts[1]) * 1e9), b = Math.round(parseFloat(parts[2]) * 1e9);
    return b > a ? [a, b] : null;
  }

  /** @param {ViewLink} link @returns {string} the fragment, with its "#" ("" for an empty link) */
  function fragmentOf(link) {
    var parts = [];
    if (link.window) { parts.push("window=" + seconds(link.window[0]) + "s:" + seconds(link.window[1]) + "s"); }
    if (link.selection) { parts.push("select=" + seconds(link.selection[0]) + "s:" + seconds(link.selection[1]) + "s"); }
    if (link.frame !== null && link.frame !== undefined) { parts.push("frame=" + link.frame); }
    if (link.search) { parts.push("search=" + encodeURIComponent(link.search)); }
    if (link.pins && link.pins.length) { parts.push("pin=" + link.pins.join(".")); }
    if (link.folds && link.folds.length) { parts.push("fold=" + link.folds.join(".")); }
    if (link.hiddenKinds && link.hiddenKinds.length) { parts.push("hide=" + link.hiddenKinds.join(".")); }
    if (link.hideEmpty) { parts.push("empty=hide"); }
    if (link.selection && link.selectionRows && link.selectionRows.length) { parts.push("rows=" + link.selectionRows.join(".")); }
    return parts.length ? "#" + parts.join("&") : "";
  }

  /** @param {string} fragment a link's fragment, with or without "#" @returns {ViewLink} what it says (null: not said) */
  function linkOf(fragment) {
    /** @type {ViewLink} */
    var link = {window: null, selection: null, frame: null, search: null, pins: null, folds: null, hiddenKinds: null,
                hideEmpty: null, selectionRows: null};
    /** @param {string} value @returns {Array<number>} */
    var numbers = function (value) {
      return value.split(".").filter(function (v) { return /^\d+$/.test(v); }).map(Number);
    };
    String(fragment || "").replace(/^#/, "").split("&").forEach(function (part) {
      var at = part.indexOf("="), key = part.slice(0, at), value = part.slice(at + 1);
      if (at < 0) { return; }
      if (key === "window") { link.window = spanOf(value); }
      else if (key === "select") { link.selection = spanOf(value); }
      else if (key === "frame" && /^\d+$/.test(value)) { link.frame = parseInt(value, 10); }
      else if (key === "pin") { link.pins = numbers(value); }
      else if (key === "fold") { link.folds = numbers(value); }
      else if (key === "hide") { link.hiddenKinds = value.split(".").filter(function (v) { return /^[a-z_]+$/.test(v); }); }
      else if (key === "empty") { link.hideEmpty = value === "hide"; }
      else if (key === "rows") { link.selectionRows = numbers(value); }
      else if (key === "search") {
        try { link.search = decodeURIComponent(value); } catch (error) { link.search = null; }
      }
    });
    return link;
  }

  /**
   * The view [t0, t1) over a plot ``width`` pixels wide from ``left``.
   * @param {number} t0 @param {number} t1 @param {number} left @param {number} width
   * @returns {View}
   */
  function view(t0, t1, left, width) {
    var nsPerPx = (t1 - t0) / width;
    return {t0: t0, t1: t1, left: left, width: width, nsPerPx: nsPerPx,
            x: function (t) { return left + (t - t0) / (t1 - t0) * width; },
            t: function (x) { return t0 + (x - left) * nsPerPx; }};
  }

  // ticks over [t0, t1) (ns on the report's clock) about every 110 pixels of width, at 1, 2 or 5 times a power
  // of ten, labelled with their time in seconds; below a microsecond's step (a deep zoom) the first tick keeps
  // its time and the others their distance from it ("+250 ns"), as Nsight Systems and Perfetto label it
  function ticks(t0, t1, width) {
    var raw = (t1 - t0) / Math.max(2, Math.floor(width / 110));
    var power = Math.pow(10, Math.floor(Math.log10(Math.max(raw, 1))));
    var step = [1, 2, 5, 10].map(function (m) { return m * power; }).filter(function (v) { return v >= raw; })[0];
    var first = Math.ceil(t0 / step) * step, found = [];
    var unit = UNITS.filter(function (u) { return step >= u[0]; })[0] || UNITS[3];
    var decimals = Math.max(0, Math.ceil(-Math.log10(step / 1e9) - 1e-9)), relative = step < 1e3;
    for (var t = first, k = 0; t < t1 && k < 200; k++, t = first + k * step) {
      var label = k === 0 || !relative ? (t / 1e9).toFixed(decimals) + " s" : "+" + fixed(k * step / unit[0]) + " " + unit[1];
      found.push({t: t, label: label});
    }
    return {step: step, ticks: found};
  }

  function fixed(value) { return String(Math.round(value * 1000) / 1000); }

  // a name's colour: the same name the same colour on every row and every page (FNV-1a of its text); light
  // enough for dark text on it
  var colours = {};
  function colourOf(name) {
    var found = colours[name];
    if (found) { return found; }
    var h = 0x811c9dc5;
    for (var i = 0; i < name.length; i++) { h ^= name.charCodeAt(i); h = Math.imul(h, 0x01000193) >>> 0; }
    found = "hsl(" + (h % 360) + "," + (45 + (h >>> 9) % 25) + "%," + (62 + (h >>> 17) % 12) + "%)";
    colours[name] = found;
    return found;
  }

  function overlaps(row, i, a, b) {  // as SQL has it: end > a and start < b (a sample: a <= start < b)
    return row.kind === "sample" ? row.starts[i] >= a && row.starts[i] < b : row.ends[i] > a && row.starts[i] < b;
  }

  // the events of a row in [a, b): the long ones that began before the stretch, then the stretch [lo, hi),
  // whose events may still end before a (callers check with overlaps)
  function stretch(row, a, b) {
    var lo = search(row.reach, a, row.kind === "sample"), hi = search(row.starts, b, true), before = [];
    for (var k = 0; k < row.long.length && row.long[k] < lo; k++) {
      if (overlaps(row, row.long[k], a, b)) { before.push(row.long[k]); }
    }
    return {lo: lo, hi: hi, before: before};
  }

  // which names hold the query (case-insensitive): a flag per name, and how many names
  function matchNames(names, query) {
    var flags = new Uint8Array(names.length), q = query.trim().toLowerCase(), n = 0;
    if (!q) { return {flags: flags, names: 0}; }
    for (var i = 0; i < names.length; i++) {
      if (names[i].toLowerCase().indexOf(q) >= 0) { flags[i] = 1; n++; }
    }
    return {flags: flags, names: n};
  }

  // a row's events whose names are flagged, over the run (from its count of each name: a search of a name most
  // events hold reads no event)
  function countMatches(row, flags) {
    if (!row.loaded) { return 0; }
    var n = 0, counts = row.nameCounts;
    for (var k = 0; k < counts.length; k++) { if (counts[k] && flags[k]) { n += counts[k]; } }
    return n;
  }

  // the next (direction 1) or previous (-1) flagged event after ``at`` ({start, row, index}; rows in the page's
  // order break ties of start), over every loaded row (``shown``: of those it says are drawn); wraps around the
  // run's ends; null when none
  function stepMatch(data, flags, at, direction, shown) {
    var best = null;
    data.rows.forEach(function (row, r) {
      if (!row.loaded || !row.count || (shown && !shown(r))) { return; }
      var starts = row.starts, names = row.names, i;
      if (direction > 0) {
        for (i = search(starts, at.start, true); i < starts.length; i++) {
          if (starts[i] === at.start && (r < at.row || (r === at.row && i <= at.index))) { continue; }
          if (flags[names[i]]) { break; }
        }
        if (i < starts.length && (!best || starts[i] < best.start || (starts[i] === best.start && r < best.row))) {
          best = {start: starts[i], row: r, index: i};
        }
      } else {
        for (i = search(starts, at.start, false) - 1; i >= 0; i--) {
          if (starts[i] === at.start && (r > at.row || (r === at.row && i >= at.index))) { continue; }
          if (flags[names[i]]) { break; }
        }
        if (i >= 0 && (!best || starts[i] > best.start || (starts[i] === best.start && r > best.row))) {
          best = {start: starts[i], row: r, index: i};
        }
      }
    });
    if (best || at.wrapped) { return best; }
    var around = direction > 0 ? {start: -Infinity, row: -1, index: -1} : {start: Infinity, row: 1e9, index: 1e9};
    around.wrapped = true;
    return stepMatch(data, flags, around, direction, shown);
  }

  // a duration's bin: the octave from its highest bit, the half of it from the next (no logarithm: a span's
  // statistics bin millions of durations)
  function binOf(ns) {
    if (ns < 1) { return 0; }
    if (ns >= 4294967296) {  // past 32 bits (4.3 s): rare, the slow way
      var high = Math.floor(Math.log2(ns)) + 1;
      return Math.min(BINS - 1, 2 * high - 1 + (Math.floor(ns / Math.pow(2, high - 2)) & 1));
    }
    var b = 32 - Math.clz32(ns);
    return 2 * b - 1 + (b >= 2 ? (ns >>> (b - 2)) & 1 : 0);
  }

  function binEdges(bin) {
    if (bin === 0) { return [0, 1]; }
    if (bin <= 2) { return [1, 2]; }
    var base = Math.pow(2, ((bin + 1) >> 1) - 1), half = (bin + 1) & 1;
    return [base * (1 + half / 2), base * (1 + (half + 1) / 2)];
  }

  // a sample's stack as lines under its leaf: the functions that called it, innermost first, at most ``most``
  // of them and how many more
  function stackText(data, node, most) {
    var frames = codec.stackOf(data, node).slice(1), shown = frames.slice(0, most);
    if (!frames.length) { return ""; }
    return "\ncalled from:\n  " + shown.join("\n  ") +
      (frames.length > shown.length ? "\n  and " + (frames.length - shown.length) + " more frames" : "");
  }

  // the links of an event (row index, event index) to the work it queued or that queued it: an API call to its
  // GPU work, GPU work to the calls that queued it, an NVTX range to the GPU work its thread's calls in it queued
  function flowsOf(data, r, index) {
    var row = data.rows[r], found = [], seen = {};
    if (!data.links) { return found; }
    function linked(from, place, api) {
      codec.linksOf(data, place).forEach(function (k) {
        if (found.length >= MAX_FLOWS) { return; }
        var gpu = codec.rowOf(data, data.links.gpu[k]);
        if (api) {
          if (seen[data.links.gpu[k]]) { return; }
          seen[data.links.gpu[k]] = true;
          found.push({from: from, to: gpu, first: null, last: null});
        } else {
          var first = codec.rowOf(data, data.links.first[k]), last = codec.rowOf(data, data.links.last[k]);
          found.push({from: first, to: gpu, first: first, last: last});
        }
      });
    }
    if (row.kind === "nvtx") {
      var a = row.starts[index], b = row.ends[index];
      data.rows.forEach(function (other, o) {
        if (other.group !== row.group || !API_KINDS[other.kind] || !other.loaded) { return; }
        var s = stretch(other, a, b);
        for (var i = s.lo; i < s.hi && found.length < MAX_FLOWS; i++) {
          if (other.starts[i] >= a && other.ends[i] <= b) { linked([o, i], other.offset + i, true); }
        }
      });
      return found;
    }
    linked([r, index], row.offset + index, Boolean(API_KINDS[row.kind]));
    return found;
  }

  return {duration: duration, seconds: seconds, ticks: ticks, colourOf: colourOf, overlaps: overlaps,
          stretch: stretch, matchNames: matchNames, countMatches: countMatches, stepMatch: stepMatch,
          binOf: binOf, binEdges: binEdges, flowsOf: flowsOf, view: view,
          fragmentOf: fragmentOf, linkOf: linkOf, stackText: stackText, BINS: BINS, MIN_SPAN: MIN_SPAN};
}());
