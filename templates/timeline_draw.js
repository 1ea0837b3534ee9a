// The whole-run timeline's drawing on its canvas: the time axis, frames, each row's events (named and coloured by
// name where they are wide enough; a per-pixel summary where too many are in view), the board's series, the
// verdict's findings, search marks, the selected span and the links from a call to its GPU work; and what lies
// under the pointer (hit). ``tl`` is the page's state (templates/timeline.js): data, view [t0, t1) in ns from the origin, layout, search, selection.
var orchestrateTimelineDraw = (function () {
  "use strict";
  var tools = orchestrateTimelineTools, search = orchestrateTimelineData.search;
  var EXACT = 16384, BAR_INK = "#1d2330", CHAR_W = 6.1, MIN_LABEL_W = 34, TIP_FRAMES = 12;
  var levels = orchestrateTimelineLevels, rowsOf = orchestrateTimelineRows, unitOf = rowsOf.unitOf;
  // the page's colours (report.css's, light or dark as prefers-color-scheme says), read again when the scheme changes
  var kindColours = {}, colours = {ink: "", paper: "", grid: "", strip: "", rule: "", soft: "", head: "", pinned: ""};
  function readColours() {
    var style = getComputedStyle(document.documentElement);
    ["nvtx", "opengl", "osrt", "cuda_api", "cuda_kernel", "memcpy", "opengl_gpu", "sample", "state"].forEach(function (k) {
      kindColours[k] = style.getPropertyValue("--" + k).trim() || "#2f6fde";
    });
    Object.keys(colours).forEach(function (name) {
      colours[name] = style.getPropertyValue("--tl-" + name).trim() || "#888";
    });
  }
  readColours();
  if (window.matchMedia) { window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", readColours); }

  function kindColour(kind) { return kindColours[kind] || "#888"; }

  /**
   * @param {TimelineState} tl @param {View} view the view's mapping, made once for this paint
   * @param {CanvasRenderingContext2D} ctx @param {number} cssW @param {number} cssH
   */
  function paint(tl, view, ctx, cssW, cssH) {
    var out = {rows: [], shapes: 0, inView: 0, ticks: []};
    var v = Object.assign({tl: tl, out: out, cssH: cssH}, view);
    ctx.clearRect(0, 0, cssW, cssH);
    ctx.font = "10px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    paintGrid(ctx, v);
    tl.layout.forEach(function (place) {
      if (place.type === "frames") { out.shapes += paintFrames(ctx, v, place); return; }
      if (place.type === "board") { out.shapes += paintBoard(ctx, v, place); return; }
      if (place.type === "process") { paintHead(ctx, v, place); return; }
      var row = place.row, s = tools.stretch(row, tl.t0, tl.t1), n = Math.max(0, s.hi - s.lo);
      var exact = row.loaded && (!row.levels.length || n <= EXACT);
      var drawn = exact ? paintEvents(ctx, v, place, s) : levels.paint(ctx, v, place, kindColour(row.kind), colours.ink);
      out.shapes += drawn.shapes;
      out.inView += drawn.matches;
      out.rows.push({group: row.group, kind: row.kind, visible: exact ? drawn.visible : n, matches: drawn.matches,
                     mode: exact ? "events" : "level", width: exact ? null : levels.levelFor(row, v.nsPerPx).width,
                     inked: exact ? drawn.inked / Math.max(1, v.width) : drawn.inked});
    });
    out.shapes += paintFindings(ctx, v);
    paintSelection(ctx, v);
    paintFlows(ctx, v);
    paintAxis(ctx, v);
    paintLabels(ctx, tl, cssH);
    return out;
  }

  function paintGrid(ctx, v) {
    var tl = v.tl, found = tools.ticks(tl.origin + tl.t0, tl.origin + tl.t1, v.width);
    v.ticks = found.ticks;
    ctx.fillStyle = colours.grid;
    found.ticks.forEach(function (tick) { ctx.fillRect(Math.round(v.x(tick.t - tl.origin)), tl.AXIS_H, 1, v.cssH); });
  }

  // the axis strip: tick labels, the selected span's length (the ruler) and the pointer's time
  function paintAxis(ctx, v) {
    var tl = v.tl, h = tl.AXIS_H, last = -Infinity;
    ctx.fillStyle = colours.strip;
    ctx.fillRect(tl.LABEL_W, 0, v.width, h);
    ctx.fillStyle = colours.rule;
    ctx.fillRect(tl.LABEL_W, h - 1, v.width, 1);
    ctx.font = "10px system-ui, sans-serif";
    v.ticks.forEach(function (tick) {
      var x = v.x(tick.t - tl.origin), w = ctx.measureText(tick.label).width;
      ctx.fillStyle = colours.soft;
      ctx.fillRect(Math.round(x), h - 6, 1, 6);
      if (x + 3 + w > tl.LABEL_W + v.width || x + 3 < last) { tick.shown = false; return; }
      ctx.fillStyle = colours.ink;
      ctx.fillText(tick.label, x + 3, h / 2 - 2);
      tick.shown = true;
      last = x + 3 + w + 8;
      v.out.ticks.push({t: tick.t, x: x, label: tick.label});
    });
    var sel = tl.selecting || tl.selection;  // the ruler: the span being dragged, else the one selected
    if (sel) {
      var a = Math.max(tl.LABEL_W, v.x(sel.t0)), b = Math.min(tl.LABEL_W + v.width, v.x(sel.t1));
      if (b > a) {
        var text = "\u2194 " + tools.duration(sel.t1 - sel.t0), tw = ctx.measureText(text).width + 10;
        var mid = Math.max(tl.LABEL_W, Math.min(tl.LABEL_W + v.width - tw, (a + b) / 2 - tw / 2));
        ctx.fillStyle = "#2f6fde";
        ctx.fillRect(a, h - 4, b - a, 3);
        ctx.fillRect(mid, 2, tw, h - 8);
        ctx.fillStyle = "#fff";
        ctx.fillText(text, mid + 5, h / 2 - 2);
      }
    }
    if (tl.pointer && tl.pointer[0] >= tl.LABEL_W) {
      var px = tl.pointer[0], t = v.t(px);
      var label = tools.seconds(tl.origin + t) + " s", lw = ctx.measureText(label).width + 8;
      var lx = Math.min(px + 1, tl.LABEL_W + v.width - lw);
      ctx.fillStyle = colours.soft;
      ctx.fillRect(Math.round(px), h, 1, v.cssH - h);
      ctx.fillStyle = colours.ink;
      ctx.fillRect(lx, 2, lw, h - 8);
      ctx.fillStyle = colours.paper;
      ctx.fillText(label, lx + 4, h / 2 - 2);
    }
  }

  // each depth of nesting a lane of its own; within a lane, events narrower than two pixels that touch are one
  // shape (the row kind's colour), wider ones keep a pixel's gap at their end and take their name's colour and,
  // where it fits, their name; under a search, the events it does not find are faint
  function paintEvents(ctx, v, place, s) {
    var tl = v.tl, row = place.row, names = row.names, flags = tl.search ? tl.search.flags : null;
    var h = (place.h - 2) / row.lanes, lanes = [], result = {shapes: 0, visible: 0, matches: 0, inked: 0};
    var right = tl.LABEL_W + v.width, sample = row.kind === "sample", words = tl.data.header.names;
    for (var d = 0; d < row.lanes; d++) {
      lanes.push({x0: -1, x1: -1, wide: false, first: -1, n: 0, match: false, covered: 0});
    }
    // a stretch of events narrower than their pixels is shaded as much as they cover it, with a line along its
    // foot that says where they are: a row of brief GPU work is not drawn busy at a zoom where each piece takes a
    // pixel of its own
    function flush(lane, d) {
      if (lane.x1 <= lane.x0) { return; }
      var y = place.y + 1 + d * h, w = lane.x1 - lane.x0, one = lane.n === 1;
      var cover = lane.wide || sample ? 1 : Math.min(1, lane.covered / w), faint = flags && !lane.match ? 0.22 : 1;
      if (d === 0 && !sample) { result.inked += w * cover; }
      ctx.fillStyle = one && !sample ? tools.colourOf(words[names[lane.first]]) : kindColour(row.kind);
      if (cover < 1) {
        ctx.globalAlpha = faint;
        ctx.fillRect(lane.x0, y + Math.max(1, h - 1) - 1, w, 1);
      }
      ctx.globalAlpha = faint * cover;
      if (sample) { ctx.fillRect(lane.x0, y + h / 2, w, h / 2); } else {
        ctx.fillRect(lane.x0, y, lane.wide && w >= 3 ? w - 1 : w, Math.max(1, h - 1));
      }
      ctx.globalAlpha = 1;
      if (flags && lane.match) {
        ctx.fillStyle = colours.ink;
        ctx.fillRect(lane.x0, y, Math.max(1, w - 1), 2);
      }
      if (one && !sample && w >= MIN_LABEL_W && h >= 9) {
        var text = words[names[lane.first]], fits = Math.floor((w - 6) / CHAR_W);
        if (fits >= 2) {
          ctx.fillStyle = BAR_INK;
          ctx.fillText(text.length > fits ? text.slice(0, fits - 1) + "\u2026" : text, lane.x0 + 3, y + h / 2);
        }
      }
      result.shapes++;
    }
    function add(i) {
      var x0 = Math.max(tl.LABEL_W, v.x(row.starts[i])), x1 = Math.min(right, v.x(row.ends[i]));
      var match = flags ? flags[names[i]] === 1 : false, lane = lanes[row.depths[i]], real = Math.max(0, x1 - x0);
      result.visible++;
      if (match) { result.matches++; }
      if (x1 - x0 < 1) { x1 = x0 + 1; }
      var wide = x1 - x0 >= 2;
      if (!wide && !lane.wide && x0 <= lane.x1 + 0.5) {
        lane.covered += real;  // a lane's events do not overlap
        lane.x1 = Math.max(lane.x1, x1);
        lane.n++;
        lane.match = lane.match || match;
        return;
      }
      flush(lane, row.depths[i]);
      lane.x0 = x0;
      lane.x1 = x1;
      lane.wide = wide;
      lane.first = i;
      lane.n = 1;
      lane.match = match;
      lane.covered = real;
    }
    s.before.forEach(add);
    for (var i = s.lo; i < s.hi; i++) {
      if (sample ? row.starts[i] >= tl.t0 : row.ends[i] > tl.t0) { add(i); }
    }
    lanes.forEach(flush);
    return result;
  }

  function paintFrames(ctx, v, place) {
    var tl = v.tl, frames = tl.data.header.frames, shapes = 0, last = -1, right = tl.LABEL_W + v.width;
    var lo = Math.max(0, search(tl.frameStarts, tl.t0, true) - 1);
    for (var i = lo; i < frames.length && frames[i][0] < tl.t1; i++) {
      var x0 = v.x(frames[i][0]), x1 = v.x(frames[i][0] + frames[i][1]);
      if (x1 < tl.LABEL_W) { continue; }
      if (Math.floor(x0) === last && x1 - x0 < 1) { continue; }
      last = Math.floor(x0);
      var a = Math.max(tl.LABEL_W, x0), w = Math.max(1, Math.min(right, x1) - a);
      ctx.fillStyle = i % 2 ? "#c7d3e8" : "#9fb3d6";
      ctx.fillRect(a, place.y + 2, w, place.h - 4);
      if (w >= 40) {
        ctx.fillStyle = BAR_INK;
        ctx.fillText(clipText(ctx, unitOf(tl.data) + " " + i + " \u00b7 " + tools.duration(frames[i][1]), w - 6), a + 3, place.y + place.h / 2);
      }
      shapes++;
    }
    return shapes;
  }

  function paintBoard(ctx, v, place) {
    var tl = v.tl, points = tl.data.header.board[place.name], top = 0, started = false;
    points.forEach(function (p) { top = Math.max(top, p[1]); });
    top = top || 1;
    ctx.save();
    ctx.beginPath();
    ctx.rect(tl.LABEL_W, place.y, v.width, place.h);
    ctx.clip();
    ctx.strokeStyle = "#2f6fde";
    ctx.beginPath();
    points.forEach(function (p) {
      var x = v.x(p[0]), y = place.y + place.h - 2 - (place.h - 4) * p[1] / top;
      if (started) { ctx.lineTo(x, y); } else { ctx.moveTo(x, y); started = true; }
    });
    ctx.stroke();
    ctx.restore();
    return started ? 1 : 0;
  }

  function paintFindings(ctx, v) {
    var tl = v.tl, shapes = 0;
    ctx.fillStyle = "rgba(201, 71, 90, 0.14)";
    tl.data.header.findings.forEach(function (finding) {
      if (finding.end_ns < tl.t0 || finding.start_ns > tl.t1) { return; }
      var x0 = Math.max(tl.LABEL_W, v.x(finding.start_ns)), x1 = Math.min(tl.LABEL_W + v.width, v.x(finding.end_ns));
      ctx.fillRect(x0, tl.AXIS_H, Math.max(2, x1 - x0), v.cssH - tl.AXIS_H);
      shapes++;
    });
    return shapes;
  }

  // the selected span (its rows' part darker) while it is dragged and once made
  function paintSelection(ctx, v) {
    var tl = v.tl, sel = tl.selecting || tl.selection;
    if (!sel) { return; }
    var a = Math.max(tl.LABEL_W, v.x(sel.t0)), b = Math.min(tl.LABEL_W + v.width, v.x(sel.t1));
    if (b <= a) { return; }
    ctx.fillStyle = "rgba(47, 111, 222, 0.08)";
    ctx.fillRect(a, tl.AXIS_H, b - a, v.cssH - tl.AXIS_H);
    ctx.fillStyle = "rgba(47, 111, 222, 0.14)";
    ctx.fillRect(a, sel.y0, b - a, sel.y1 - sel.y0);
    ctx.fillStyle = "#2f6fde";
    ctx.fillRect(Math.round(a), tl.AXIS_H, 1, v.cssH - tl.AXIS_H);
    ctx.fillRect(Math.round(b) - 1, tl.AXIS_H, 1, v.cssH - tl.AXIS_H);
  }

  // the selected event outlined, and each link from a call to the GPU work it queued as a curve with an arrow
  function paintFlows(ctx, v) {
    var tl = v.tl, picked = tl.selected;
    if (!picked) { return; }
    function box(at) {
      var place = tl.placeOfRow[at[0]], row = place.row, h = (place.h - 2) / row.lanes;
      var x0 = v.x(row.starts[at[1]]), x1 = Math.max(x0 + 1, v.x(row.ends[at[1]]));
      return {x0: x0, x1: x1, y: place.y + 1 + row.depths[at[1]] * h, h: Math.max(1, h - 1)};
    }
    if (!tl.placeOfRow[picked.row]) { return; }  // on a folded or hidden row
    var own = box([picked.row, picked.index]);
    ctx.strokeStyle = colours.ink;
    ctx.lineWidth = 2;
    ctx.strokeRect(own.x0, own.y, own.x1 - own.x0, own.h);
    ctx.strokeStyle = "#c9475a";
    ctx.fillStyle = "#c9475a";
    ctx.lineWidth = 1.5;
    (tl.flows || []).forEach(function (flow) {
      if (!tl.placeOfRow[flow.from[0]] || !tl.placeOfRow[flow.to[0]]) { return; }  // an end on a row not shown
      var from = box(flow.from), to = box(flow.to);
      var x0 = from.x0, y0 = from.y + from.h / 2, x1 = to.x0, y1 = to.y + to.h / 2, bend = Math.max(20, Math.abs(y1 - y0) / 2);
      ctx.strokeRect(to.x0, to.y, to.x1 - to.x0, to.h);
      ctx.beginPath();
      ctx.moveTo(x0, y0);
      ctx.bezierCurveTo(x0, y0 + (y1 > y0 ? bend : -bend), x1, y1 - (y1 > y0 ? bend : -bend), x1, y1);
      ctx.stroke();
      var dir = y1 > y0 ? -1 : 1;
      ctx.beginPath();
      ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 4, y1 + dir * 7);
      ctx.lineTo(x1 + 4, y1 + dir * 7);
      ctx.fill();
    });
    ctx.lineWidth = 1;
  }

  // a process's header across the plot: a band, its rows folded or not
  function paintHead(ctx, v, place) {
    ctx.fillStyle = place.process < 0 ? colours.pinned : colours.head;
    ctx.fillRect(v.tl.LABEL_W, place.y, v.width, place.h - 1);
  }

  // the rows' labels: a process's header (folded or not, bold), each thread's first row its name, each row its kind
  function paintLabels(ctx, tl, height) {
    ctx.fillStyle = colours.paper;
    ctx.fillRect(0, 0, tl.LABEL_W - 4, height);
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = colours.soft;
    ctx.fillText("time (s, the report's clock)", 4, tl.AXIS_H / 2 - 2);
    var previous = null;
    tl.layout.forEach(function (place) {
      var x = 4, text = place.label;
      if (place.type === "process") {
        ctx.fillStyle = place.process < 0 ? colours.pinned : colours.head;
        ctx.fillRect(0, place.y, tl.LABEL_W - 4, place.h - 1);
        ctx.fillStyle = colours.ink;
        ctx.font = "bold 11px system-ui, sans-serif";
        text = (place.process < 0 ? "\u2691 " : place.folded ? "\u25b8 " : "\u25be ") + place.label +
          (place.folded ? " (" + place.rows + " rows)" : "");
        ctx.fillText(clipText(ctx, text, tl.LABEL_W - 10), x, place.y + place.h / 2);
        ctx.font = "11px system-ui, sans-serif";
        previous = null;
        return;
      }
      if (place.type === "row") {
        var group = place.row.group === previous && !place.pinned ? "" : place.row.group;
        previous = place.row.group;
        ctx.fillStyle = kindColour(place.row.kind);
        ctx.fillRect(12, place.y + 3, 8, Math.min(8, place.h - 6));
        x = 24;
        text = group + (group ? " \u00b7 " : "") + place.kindName;
      }
      ctx.fillStyle = colours.ink;
      ctx.fillText(clipText(ctx, text, tl.LABEL_W - x - 6), x, place.y + Math.min(place.h, 14) / 2 + 1);
    });
  }

  function clipText(ctx, text, width) {
    if (ctx.measureText(text).width <= width) { return text; }
    while (text.length > 1 && ctx.measureText(text + "\u2026").width > width) { text = text.slice(0, -1); }
    return text + "\u2026";
  }

  function placeAt(tl, y) {
    for (var i = 0; i < tl.layout.length; i++) {
      if (y >= tl.layout[i].y && y < tl.layout[i].y + tl.layout[i].h) { return tl.layout[i]; }
    }
    return null;
  }

  // what is under the pointer (x, y on the canvas): a frame, a board sample, or the event with
  // the most time under the pointer's pixel (within 3 pixels when none covers it), in the lane under it first
  /** @param {TimelineState} tl @param {View} view @param {number} x @param {number} y */
  function hit(tl, view, x, y) {
    var place = placeAt(tl, y), t = view.t(x), px = view.nsPerPx, slop = 3 * px;
    var clock = function (ns) { return tools.seconds(tl.origin + ns); };
    if (!place) { return null; }
    if (x < tl.LABEL_W) { return {label: place, text: rowsOf.labelOf(place)}; }
    if (place.type === "process") { return null; }
    if (place.type === "frames") {
      var f = search(tl.frameStarts, t, false) - 1, frame = tl.data.header.frames[f];
      return frame && t <= frame[0] + frame[1] + slop ? {frame: f, text: unitOf(tl.data) + " " + f + "\n" + clock(frame[0]) +
        " s, " + tools.duration(frame[1])} : null;
    }
    if (place.type === "board") {
      var points = tl.data.header.board[place.name], near = null;
      points.forEach(function (p) { if (p[0] <= t) { near = p; } });
      return near ? {text: place.name + ": " + near[1] + " at " + clock(near[0]) + " s"} : null;
    }
    var row = place.row, best = -1, bestScore = -1;
    if (!row.loaded) { return {text: row.group + "\n" + row.count + " events, still being read"}; }
    var lane = Math.max(0, Math.min(row.lanes - 1, Math.floor((y - place.y - 1) / ((place.h - 2) / row.lanes))));
    var s = tools.stretch(row, t - slop, t + slop);
    if (s.hi - s.lo > EXACT) { return {text: row.group + "\n" + (s.hi - s.lo) + " events here: zoom in to see them"}; }
    var a = t - px / 2, b = t + px / 2;
    function consider(i) {
      if (row.starts[i] > t + slop || row.ends[i] + slop < t) { return; }
      var under = Math.max(0, Math.min(b, row.ends[i]) - Math.max(a, row.starts[i]));
      var score = (row.depths[i] === lane ? 4 : 0) + (under > 0 ? 2 + under / px : 1 / (1 + Math.abs(row.starts[i] - t)));
      if (score > bestScore) { best = i; bestScore = score; }
    }
    s.before.forEach(consider);
    for (var i = s.lo; i < s.hi; i++) { consider(i); }
    if (best < 0) { return null; }
    var text = tl.data.header.names[row.names[best]] + "\n" + row.group + " \u00b7 " + place.kindName + "\n" +
      (row.stacks ? "at " + clock(row.starts[best]) + " s" + tools.stackText(tl.data, row.stacks[best], TIP_FRAMES) :
        "start " + clock(row.starts[best]) + " s, " + tools.duration(row.ends[best] - row.starts[best]));
    return {row: place.index, index: best, start: row.starts[best], end: row.ends[best], text: text};
  }

  return {paint: paint, hit: hit, kindColour: kindColour, unitOf: unitOf, EXACT: EXACT, colours: colours};
}());
