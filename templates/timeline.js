// The whole-run timeline (#run-timeline): the run's events on a canvas, zoomed and panned as in Nsight Systems.
// Its data comes from templates/timeline_data.js (orchestrateTimelineData): no request, no library.
// window.orchestrateTimeline is its handle for tests and benches.
(function () {
  "use strict";
  var section = document.getElementById("run-timeline-section");
  var block = document.getElementById("run-timeline-data");
  if (!section || !block) { return; }
  var canvas = section.querySelector("canvas");
  var tip = section.querySelector(".tl-tip");
  var rangeText = section.querySelector("[data-tl-range]");
  var windowText = section.querySelector("[data-tl-window]");
  var status = section.querySelector("[data-tl-status]");
  var codec = orchestrateTimelineData, search = codec.search;
  var EXACT = 16384, LABEL_W = 190, ROW_H = 14, LANE_H = 8, FRAME_H = 16, BOARD_H = 30, MIN_SPAN = 1000;
  var colours = {}, style = getComputedStyle(document.documentElement);
  ["nvtx", "opengl", "osrt", "cuda_api", "cuda_kernel", "memcpy", "opengl_gpu"].forEach(function (k) {
    colours[k] = style.getPropertyValue("--" + k).trim() || "#2f6fde";
  });
  colours.sample = "#5b6475";
  var api = {began: performance.now(), ready: false, detailLoaded: false, paints: 0, firstPaintMs: null, lastPaintMs: null, rows: [], view: [0, 0], shapes: 0};
  window.orchestrateTimeline = api;

  // the events of the rows with levels, once the first paint is out
  function parseDetail(buffer) {
    codec.parseDetail(buffer, data);
    api.detailLoaded = true;
    schedule();
  }

  var data = null, t0 = 0, t1 = 1, layout = [], dirty = false, pointer = null, drag = null;

  function seconds(ns) { return ((data.header.origin + ns) / 1e9).toFixed(6); }
  function duration(ns) {
    if (ns >= 1e9) { return (ns / 1e9).toFixed(3) + " s"; }
    if (ns >= 1e6) { return (ns / 1e6).toFixed(3) + " ms"; }
    if (ns >= 1e3) { return (ns / 1e3).toFixed(2) + " \u00b5s"; }
    return ns.toFixed(0) + " ns";
  }

  // the stretch of a row's events that holds those in view: [lo, hi) (an event in it may still end before t0)
  function visible(row) {
    return [search(row.reach, t0, row.kind === "sample"), search(row.starts, t1, true)];
  }

  function inView(row, i) {  // as SQL has it: end > t0 and start < t1 (a sample: t0 <= start < t1)
    return row.kind === "sample" ? row.starts[i] >= t0 : row.ends[i] > t0;
  }

  // the long events that began before the stretch and are in view
  function longBefore(row, lo) {
    var found = [];
    for (var k = 0; k < row.long.length && row.long[k] < lo; k++) {
      if (inView(row, row.long[k]) && row.starts[row.long[k]] < t1) { found.push(row.long[k]); }
    }
    return found;
  }

  function countInView(row, range) {
    var n = longBefore(row, range[0]).length;
    for (var i = range[0]; i < range[1]; i++) { if (inView(row, i)) { n++; } }
    return n;
  }

  function plotWidth() { return canvas.clientWidth - LABEL_W; }
  function xOf(t, width) { return LABEL_W + (t - t0) / (t1 - t0) * width; }
  function tOf(x) { return t0 + (x - LABEL_W) / plotWidth() * (t1 - t0); }

  function setView(a, b) {
    var span = data.header.span, width = Math.max(MIN_SPAN, Math.min(b - a, span * 1.2));
    var centre = (a + b) / 2;
    a = centre - width / 2;
    b = centre + width / 2;
    var slack = span * 0.1;
    if (a < -slack) { b += -slack - a; a = -slack; }
    if (b > span + slack) { a -= b - span - slack; b = span + slack; }
    t0 = a;
    t1 = b;
    api.view = [data.header.origin + t0, data.header.origin + t1];
    schedule();
  }

  function schedule() {
    if (!dirty) { dirty = true; requestAnimationFrame(paint); }
  }

  function paint() {
    dirty = false;
    if (!data || plotWidth() <= 0) { return; }
    var began = performance.now(), ratio = window.devicePixelRatio || 1;
    var cssW = canvas.clientWidth, cssH = canvas.clientHeight;
    if (canvas.width !== Math.round(cssW * ratio) || canvas.height !== Math.round(cssH * ratio)) {
      canvas.width = Math.round(cssW * ratio);
      canvas.height = Math.round(cssH * ratio);
    }
    var ctx = canvas.getContext("2d"), width = plotWidth(), nsPerPx = (t1 - t0) / width, shapes = 0;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, cssW, cssH);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    var shown = [];
    layout.forEach(function (place) {
      if (place.type === "frames") { shapes += paintFrames(ctx, place, width); return; }
      if (place.type === "board") { shapes += paintBoard(ctx, place, width); return; }
      var row = place.row, range = visible(row), n = Math.max(0, range[1] - range[0]);
      var exact = row.loaded && (!row.levels.length || n <= EXACT);
      ctx.fillStyle = colours[row.kind] || "#888";
      shapes += exact ? paintEvents(ctx, row, range, place, width) : paintLevel(ctx, row, nsPerPx, place, width);
      shown.push({group: row.group, kind: row.kind, visible: exact ? countInView(row, range) : n,
                  mode: exact ? "events" : "level", width: exact ? null : levelFor(row, nsPerPx).width});
    });
    shapes += paintFindings(ctx, width, cssH);
    paintLabels(ctx, cssH);
    api.rows = shown;
    api.view = [data.header.origin + t0, data.header.origin + t1];
    api.shapes = shapes;
    api.paints += 1;
    api.lastPaintMs = performance.now() - began;
    if (api.firstPaintMs === null) { api.firstPaintMs = performance.now(); }
    rangeText.textContent = seconds(t0) + " s to " + seconds(t1) + " s (" + duration(t1 - t0) + ")";
    windowText.textContent = "--window " + seconds(Math.max(0, t0)) + "s:" + seconds(Math.min(data.header.span, t1)) + "s";
  }

  // each depth of nesting a lane of its own; within a lane, events narrower than two pixels that touch are one
  // shape, and wider ones keep a pixel's gap at their end so that neighbours stay apart
  function paintEvents(ctx, row, range, place, width) {
    var shapes = 0, lanes = [], lane, h = (place.h - 2) / row.lanes;
    for (var d = 0; d < row.lanes; d++) { lanes.push({x0: -1, x1: -1, wide: false}); }
    function flush(lane, d) {
      if (lane.x1 <= lane.x0) { return; }
      var y = place.y + 1 + d * h, w = lane.x1 - lane.x0;
      if (row.kind === "sample") { ctx.fillRect(lane.x0, y + h / 2, w, h / 2); } else {
        ctx.fillRect(lane.x0, y, lane.wide && w >= 3 ? w - 1 : w, Math.max(1, h - 1));
      }
      shapes++;
    }
    var before = longBefore(row, range[0]);
    for (var k = -before.length; k < range[1] - range[0]; k++) {
      var i = k < 0 ? before[before.length + k] : range[0] + k;
      if (!inView(row, i)) { continue; }
      var x0 = Math.max(LABEL_W, xOf(row.starts[i], width)), x1 = Math.min(LABEL_W + width, xOf(row.ends[i], width));
      if (x1 - x0 < 1) { x1 = x0 + 1; }
      var wide = x1 - x0 >= 2;
      lane = lanes[row.depths[i]];
      if (!wide && !lane.wide && x0 <= lane.x1 + 0.5) { lane.x1 = Math.max(lane.x1, x1); continue; }
      flush(lane, row.depths[i]);
      lane.x0 = x0;
      lane.x1 = x1;
      lane.wide = wide;
    }
    lanes.forEach(flush);
    return shapes;
  }

  function levelFor(row, nsPerPx) {
    var chosen = row.levels[0];
    row.levels.forEach(function (level) { if (level.width <= nsPerPx) { chosen = level; } });
    return chosen;
  }

  // a level's runs in view folded into the pixels they fall in (each pixel the highest value in it), then drawn as
  // stretches of pixels of one shade: at most one shape per pixel, whatever the events
  function paintLevel(ctx, row, nsPerPx, place, width) {
    var level = levelFor(row, nsPerPx), w = level.width, shapes = 0, pixels = Math.ceil(width);
    var lo = Math.max(0, search(level.first, t0 / w, true) - 1), hi = search(level.first, t1 / w, true);
    var columns = new Uint8Array(pixels + 1);
    for (var i = lo; i < hi; i++) {
      if (level.last[i] * w <= t0) { continue; }
      var p0 = Math.max(0, Math.floor(xOf(level.first[i] * w, width) - LABEL_W));
      var p1 = Math.min(pixels, Math.max(p0 + 1, Math.ceil(xOf(level.last[i] * w, width) - LABEL_W)));
      for (var p = p0; p < p1; p++) { if (level.values[i] > columns[p]) { columns[p] = level.values[i]; } }
    }
    var buckets = [[], [], [], []], shade = -1, from = 0;
    for (var x = 0; x <= pixels; x++) {
      var b = x < pixels && columns[x] ? Math.min(3, columns[x] >> 6) : -1;
      if (b === shade) { continue; }
      if (shade >= 0) { buckets[shade].push(LABEL_W + from, x - from); }
      shade = b;
      from = x;
    }
    buckets.forEach(function (rects, bucket) {
      if (!rects.length) { return; }
      ctx.globalAlpha = 0.3 + 0.7 * (bucket + 1) / 4;
      ctx.beginPath();
      for (var j = 0; j < rects.length; j += 2) { ctx.rect(rects[j], place.y + 1, rects[j + 1], place.h - 2); }
      ctx.fill();
      shapes += rects.length / 2;
    });
    ctx.globalAlpha = 1;
    return shapes;
  }

  function paintFrames(ctx, place, width) {
    var frames = data.header.frames, shapes = 0;
    var lo = Math.max(0, search(frameStarts, t0, true) - 1);
    var last = -1;
    for (var i = lo; i < frames.length && frames[i][0] < t1; i++) {
      var x0 = xOf(frames[i][0], width), x1 = xOf(frames[i][0] + frames[i][1], width);
      if (x1 < LABEL_W) { continue; }
      if (Math.floor(x0) === last && x1 - x0 < 1) { continue; }
      last = Math.floor(x0);
      ctx.fillStyle = i % 2 ? "#c7d3e8" : "#9fb3d6";
      ctx.fillRect(Math.max(LABEL_W, x0), place.y + 2, Math.max(1, Math.min(LABEL_W + width, x1) - Math.max(LABEL_W, x0)),
                   place.h - 4);
      shapes++;
    }
    return shapes;
  }
  var frameStarts = new Float64Array(0);

  function paintBoard(ctx, place, width) {
    var points = data.header.board[place.name], top = 0, started = false;
    points.forEach(function (p) { top = Math.max(top, p[1]); });
    top = top || 1;
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, place.y, width, place.h);
    ctx.clip();
    ctx.strokeStyle = "#2f6fde";
    ctx.beginPath();
    points.forEach(function (p) {
      var x = xOf(p[0], width), y = place.y + place.h - 2 - (place.h - 4) * p[1] / top;
      if (started) { ctx.lineTo(x, y); } else { ctx.moveTo(x, y); started = true; }
    });
    ctx.stroke();
    ctx.restore();
    return started ? 1 : 0;
  }

  function paintFindings(ctx, width, height) {
    var shapes = 0;
    ctx.fillStyle = "rgba(201, 71, 90, 0.14)";
    data.header.findings.forEach(function (finding) {
      if (finding.end_ns < t0 || finding.start_ns > t1) { return; }
      var x0 = Math.max(LABEL_W, xOf(finding.start_ns, width));
      var x1 = Math.min(LABEL_W + width, xOf(finding.end_ns, width));
      ctx.fillRect(x0, 0, Math.max(2, x1 - x0), height);
      shapes++;
    });
    return shapes;
  }

  function paintLabels(ctx, height) {
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, LABEL_W - 4, height);
    ctx.fillStyle = "#1d2330";
    var previous = null;
    layout.forEach(function (place) {
      var label = place.type === "row" ? (place.row.group === previous ? "" : place.row.group) : place.label;
      if (place.type === "row") { previous = place.row.group; }
      var kind = place.type === "row" ? " \u00b7 " + place.kindName : "";
      ctx.fillText(clip(ctx, label + kind, LABEL_W - 10), 4, place.y + place.h / 2);
    });
  }

  function clip(ctx, text, width) {
    if (ctx.measureText(text).width <= width) { return text; }
    while (text.length > 1 && ctx.measureText(text + "\u2026").width > width) { text = text.slice(0, -1); }
    return text + "\u2026";
  }

  var KIND_NAMES = {nvtx: "NVTX", opengl: "OpenGL", osrt: "OS runtime", cuda_api: "CUDA API", sample: "CPU samples",
                    cuda_kernel: "kernels", memcpy: "memory", opengl_gpu: "OpenGL GPU"};

  function build(parsed) {
    data = parsed;
    frameStarts = new Float64Array(data.header.frames.map(function (f) { return f[0]; }));
    var y = 0;
    layout = [];
    if (data.header.frames.length) { layout.push({type: "frames", label: "frames", y: y, h: FRAME_H}); y += FRAME_H; }
    data.rows.forEach(function (row) {
      var h = row.kind === "sample" ? ROW_H : ROW_H + (row.lanes - 1) * LANE_H;
      layout.push({type: "row", row: row, kindName: KIND_NAMES[row.kind] || row.kind, y: y, h: h});
      y += h;
    });
    Object.keys(data.header.board).forEach(function (name) {
      layout.push({type: "board", name: name, label: name, y: y, h: BOARD_H});
      y += BOARD_H;
    });
    canvas.style.height = Math.max(y, 40) + "px";
    api.layout = layout.map(function (place) {
      return {type: place.type, y: place.y, h: place.h, group: place.row ? place.row.group : place.label,
              kind: place.row ? place.row.kind : null};
    });
    api.ready = true;
    api.origin = data.header.origin;
    api.span = data.header.span;
    api.setWindow = function (a, b) { setView(a - data.header.origin, b - data.header.origin); };
    api.fitFrame = fitFrame;
    setView(0, data.header.span);
    requestAnimationFrame(function () {  // after the first paint, once the page's end (the detail) is read
      if (document.readyState === "loading") {
        document.addEventListener("DOMContentLoaded", loadDetail);
      } else {
        setTimeout(loadDetail, 0);
      }
    });
  }

  function loadDetail() {
    var block = document.getElementById("run-timeline-detail"), detail = block ? block.textContent.trim() : "";
    if (!detail) { api.detailLoaded = true; return; }
    Promise.resolve().then(function () { return codec.inflate(codec.bytesOf(detail)); }).then(parseDetail).catch(function (error) {
      status.textContent = "the timeline's events could not be read: " + error;
    });
  }

  function fitFrame(index) {
    var frame = data.header.frames[index];
    if (!frame) { return; }
    var pad = frame[1] * 0.05;
    setView(frame[0] - pad, frame[0] + frame[1] + pad);
  }

  function placeAt(y) {
    for (var i = 0; i < layout.length; i++) {
      if (y >= layout[i].y && y < layout[i].y + layout[i].h) { return layout[i]; }
    }
    return null;
  }

  function hovered(x, y) {
    var place = placeAt(y), t = tOf(x), slop = 3 * (t1 - t0) / plotWidth();
    if (!place || x < LABEL_W) { return null; }
    if (place.type === "frames") {
      var f = search(frameStarts, t, false) - 1;
      var frame = data.header.frames[f];
      return frame && t <= frame[0] + frame[1] + slop ? {frame: f, text: "frame " + f + "\n" + seconds(frame[0]) +
        " s, " + duration(frame[1])} : null;
    }
    if (place.type === "board") {
      var points = data.header.board[place.name], near = null;
      points.forEach(function (p) { if (p[0] <= t) { near = p; } });
      return near ? {text: place.name + ": " + near[1] + " at " + seconds(near[0]) + " s"} : null;
    }
    var row = place.row, best = -1;
    if (!row.loaded) { return {text: row.group + "\n" + row.count + " events, still being read"}; }
    var lane = Math.max(0, Math.min(row.lanes - 1, Math.floor((y - place.y - 1) / ((place.h - 2) / row.lanes))));
    var lo = search(row.reach, t - slop, row.kind === "sample"), hi = search(row.starts, t + slop, false);
    if (hi - lo > EXACT) { return {text: row.group + "\n" + (hi - lo) + " events here: zoom in to see them"}; }
    var candidates = row.long.filter(function (i) { return i < lo; });
    for (var i = lo; i < hi; i++) { candidates.push(i); }
    candidates.forEach(function (i) {
      if (row.starts[i] > t + slop || row.ends[i] + slop < t) { return; }
      var better = best < 0 || (row.depths[i] === lane) > (row.depths[best] === lane) ||
        ((row.depths[i] === lane) === (row.depths[best] === lane) &&
         row.ends[i] - row.starts[i] < row.ends[best] - row.starts[best]);
      if (better) { best = i; }
    });
    if (best < 0) { return null; }
    return {start: row.starts[best], end: row.ends[best],
            text: data.header.names[row.names[best]] + "\n" + row.group + " \u00b7 " + place.kindName + "\nstart " +
              seconds(row.starts[best]) + " s, " + duration(row.ends[best] - row.starts[best])};
  }

  function finding(t) {
    var found = null;
    data.header.findings.forEach(function (f) { if (f.start_ns <= t && t <= f.end_ns) { found = f; } });
    return found;
  }

  function local(event) {
    var box = canvas.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  }

  function zoom(factor, x) {
    var at = x === undefined || x < LABEL_W ? (t0 + t1) / 2 : tOf(x);
    setView(at - (at - t0) * factor, at + (t1 - at) * factor);
  }

  function pan(fraction) {
    var shift = (t1 - t0) * fraction;
    setView(t0 + shift, t1 + shift);
  }

  canvas.addEventListener("wheel", function (event) {
    event.preventDefault();
    if (!data) { return; }
    var p = local(event);
    if (event.shiftKey) { pan((event.deltaX || event.deltaY) / 1000); return; }
    zoom(Math.exp(event.deltaY * 0.002), p[0]);
  }, {passive: false});
  canvas.addEventListener("mousedown", function (event) {
    if (!data) { return; }
    drag = {x: local(event)[0], t0: t0, t1: t1};
  });
  window.addEventListener("mouseup", function () { drag = null; });
  canvas.addEventListener("mousemove", function (event) {
    if (!data) { return; }
    var p = local(event);
    pointer = p;
    if (drag) {
      var shift = (drag.x - p[0]) / plotWidth() * (drag.t1 - drag.t0);
      setView(drag.t0 + shift, drag.t1 + shift);
      tip.hidden = true;
      return;
    }
    var found = hovered(p[0], p[1]);
    if (!found) { tip.hidden = true; return; }
    tip.textContent = found.text;
    tip.hidden = false;
    tip.style.left = Math.min(p[0] + 12, canvas.clientWidth - 260) + "px";
    tip.style.top = (p[1] + 14) + "px";
  });
  canvas.addEventListener("mouseleave", function () { tip.hidden = true; pointer = null; });
  canvas.addEventListener("dblclick", function (event) {
    if (!data) { return; }
    var p = local(event), found = hovered(p[0], p[1]);
    if (p[0] < LABEL_W) { return; }
    if (found && found.frame !== undefined) { fitFrame(found.frame); return; }
    if (found && found.start !== undefined) {
      var pad = Math.max(MIN_SPAN, (found.end - found.start) * 0.1);
      setView(found.start - pad, found.end + pad);
      return;
    }
    var f = finding(tOf(p[0]));
    if (f) { setView(f.start_ns, f.end_ns); }
  });
  canvas.addEventListener("keydown", function (event) {
    if (!data || event.ctrlKey || event.metaKey || event.altKey) { return; }
    var key = event.key.toLowerCase(), x = pointer ? pointer[0] : undefined;
    if (key === "w") { zoom(0.8, x); } else if (key === "s") { zoom(1.25, x); } else if (key === "a") { pan(-0.1); }
    else if (key === "d") { pan(0.1); } else { return; }
    event.preventDefault();
  });
  window.addEventListener("resize", schedule);
  section.querySelector("[data-tl-copy]").addEventListener("click", function () {
    var text = windowText.textContent;
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { status.textContent = "copied"; },
        function () { status.textContent = "select the text to copy it"; });
    } else {
      status.textContent = "select the text to copy it";
    }
  });
  section.querySelector("[data-tl-all]").addEventListener("click", function () {
    if (data) { setView(0, data.header.span); }
  });

  // a click on a chart of frames (frame time, the GPU's time per frame) shows that frame here
  document.querySelectorAll("svg.chart[data-index-axis]").forEach(function (chart) {
    chart.addEventListener("click", function (event) {
      if (!data) { return; }
      var axis = chart.dataset.indexAxis.split(",").map(Number), point = chart.createSVGPoint();
      point.x = event.clientX;
      point.y = event.clientY;
      var x = point.matrixTransform(chart.getScreenCTM().inverse()).x;
      var index = Math.round((x - axis[0]) / Math.max(1, axis[1] - axis[0]) * (axis[2] - 1));
      fitFrame(Math.max(0, Math.min(axis[2] - 1, index)));
      section.scrollIntoView({block: "start"});
    });
  });

  Promise.resolve().then(function () { return codec.inflate(codec.bytesOf(block.textContent.trim())); }).then(function (buffer) {
    api.inflated = performance.now();
    return codec.parse(buffer);
  }).then(build).catch(function (error) {
    status.textContent = "the timeline could not be read: " + error;
  });
}());
