// The whole-run timeline (#run-timeline): the run's events on a canvas, zoomed and panned as in Nsight Systems and
// Perfetto, searched by name, a span's statistics, a call's link to its GPU work. Its data comes from
// templates/timeline_data.js, its figures from timeline_tools.js, its rows' order from timeline_rows.js, its drawing
// from timeline_draw.js (dense rows from timeline_levels.js, the whole run above from timeline_overview.js), its
// text under the canvas from timeline_panel.js, the page's frame links, charts' clicks and its own address from
// timeline_links.js: no request, no library. window.orchestrateTimeline is its handle for tests and benches.
(function () {
  "use strict";
  var section = document.getElementById("run-timeline-section");
  var block = document.getElementById("run-timeline-data");
  if (!section || !block) { return; }
  var canvas = /** @type {HTMLCanvasElement} */ (section.querySelector("#run-timeline canvas"));
  var tip = /** @type {HTMLElement} */ (section.querySelector(".tl-tip"));
  /** @param {string} name @returns {HTMLElement} */
  var $ = function (name) { return /** @type {HTMLElement} */ (section.querySelector("[data-tl-" + name + "]")); };
  var rangeText = $("range"), windowText = $("window"), status = $("status"), matchText = $("matches");
  var box = /** @type {HTMLInputElement} */ ($("search")), emptyBox = /** @type {HTMLInputElement} */ ($("empty"));
  var overviewCanvas = /** @type {HTMLCanvasElement} */ ($("overview"));
  var help = /** @type {HTMLElement} */ (section.querySelector(".tl-help")), panel = $("panel"), detailText = $("details");
  var codec = orchestrateTimelineData, tools = orchestrateTimelineTools, draw = orchestrateTimelineDraw;
  var panels = orchestrateTimelinePanel, links = orchestrateTimelineLinks, stats = orchestrateTimelineStats;
  var rowsOf = orchestrateTimelineRows;
  var MIN_SPAN = tools.MIN_SPAN;
  var KIND_NAMES = {nvtx: "NVTX", opengl: "OpenGL", osrt: "OS runtime", cuda_api: "CUDA API", state: "thread state",
                    sample: "CPU samples", cuda_kernel: "kernels", memcpy: "memory", opengl_gpu: "OpenGL GPU"};
  /** @type {TimelineState} */
  var tl = {data: null, t0: 0, t1: 1, origin: 0, LABEL_W: 190, AXIS_H: 24, layout: [], placeOfRow: [],
            frameStarts: new Float64Array(0), pointer: null, search: null, selection: null, selecting: null,
            selected: null, flows: [], rowState: rowsOf.emptyState(), linkFrame: null};
  var api = {began: performance.now(), ready: false, detailLoaded: false, paints: 0, firstPaintMs: null,
             lastPaintMs: null, rows: [], view: [0, 0], shapes: 0, ticks: [], search: null, selection: null,
             selected: null, flows: [], helpOpen: false, inputs: 0, painted: 0};
  /** @type {any} */ (window).orchestrateTimeline = api;
  var address = links.address();
  var overview = orchestrateTimelineOverview.attach(overviewCanvas, {
    data: function () { return tl.data; }, view: function () { return [tl.t0, tl.t1]; }, labelWidth: tl.LABEL_W,
    setView: function (a, b) { setView(a, b); }}, api);
  var flame = orchestrateTimelineFlame.attach($("flame"), {  // the selected span's samples, else the view's
    data: function () { return tl.data; }, origin: function () { return tl.origin; },
    span: function () { return tl.selection ? [tl.selection.t0, tl.selection.t1] : [tl.t0, tl.t1]; }}, api);
  var dirty = false, laidFor = null;

  function plotWidth() { return canvas.clientWidth - tl.LABEL_W; }
  /** @returns {View} the view as it is now */
  function view() { return tools.view(tl.t0, tl.t1, tl.LABEL_W, plotWidth()); }
  /** @param {number} x */
  function tOf(x) { return view().t(x); }
  function clock(ns) { return tools.seconds(tl.origin + ns); }
  function windowOf(a, b) { return "--window " + clock(Math.max(0, a)) + "s:" + clock(Math.min(tl.data.header.span, b)) + "s"; }

  // the view, clamped to the run: never wider than it, never before its start or after its end (a frame's link
  // stays one while its frame is what the view shows)
  function setView(a, b, keepFrame) {
    if (!keepFrame) { tl.linkFrame = null; }
    var span = tl.data.header.span, width = Math.min(span, Math.max(Math.min(MIN_SPAN, span), b - a));
    var centre = (a + b) / 2;
    a = Math.max(0, Math.min(span - width, centre - width / 2));
    tl.t0 = a;
    tl.t1 = a + width;
    schedule();
  }

  // every change asks for a paint; api.inputs counts them and api.painted says how many the last paint showed
  function schedule() {
    api.inputs += 1;
    if (!dirty) { dirty = true; requestAnimationFrame(paint); }
  }

  function paint() {
    dirty = false;
    if (!tl.data || plotWidth() <= 0) { return; }
    api.painted = api.inputs;
    if (tl.rowState.hideEmpty && laidFor !== tl.t0 + ":" + tl.t1) { relayout(); }  // rows empty in this view
    var began = performance.now(), ratio = window.devicePixelRatio || 1;
    var cssW = canvas.clientWidth, cssH = canvas.clientHeight;
    if (canvas.width !== Math.round(cssW * ratio) || canvas.height !== Math.round(cssH * ratio)) {
      canvas.width = Math.round(cssW * ratio);
      canvas.height = Math.round(cssH * ratio);
    }
    var ctx = canvas.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    var out = draw.paint(tl, view(), ctx, cssW, cssH);
    api.rows = out.rows;
    api.ticks = out.ticks;
    api.view = [tl.origin + tl.t0, tl.origin + tl.t1];
    api.shapes = out.shapes;
    if (tl.search) {
      tl.search.inView = out.inView;
      api.search = {query: tl.search.query, names: tl.search.names, total: tl.search.total, inView: out.inView,
                    current: tl.search.current};
      matchText.textContent = tl.search.names ? tl.search.total.toLocaleString("en") + " matches, " +
        out.inView.toLocaleString("en") + " in view" + (tl.search.current ? " \u00b7 at " +
        clock(tl.search.current.start) + " s" : "") : "no name holds \u201c" + tl.search.query + "\u201d";
    }
    rangeText.textContent = clock(tl.t0) + " s to " + clock(tl.t1) + " s (" + tools.duration(tl.t1 - tl.t0) + ")";
    windowText.textContent = windowOf(tl.t0, tl.t1);
    overview.paint();
    flame.update();
    showTip();
    address.write(linkNow());
    api.paints += 1;
    api.lastPaintMs = performance.now() - began;
    if (api.firstPaintMs === null) { api.firstPaintMs = performance.now(); }
  }

  function build(parsed) {
    tl.data = parsed;
    tl.origin = parsed.header.origin;
    tl.frameStarts = new Float64Array(parsed.header.frames.map(function (f) { return f[0]; }));
    if (parsed.header.renderer) { KIND_NAMES.opengl_gpu = "OpenGL work"; }  // a software renderer's, on the CPU
    codec.threadSelves(parsed);
    relayout();
    api.ready = true;
    api.origin = tl.origin;
    api.span = parsed.header.span;
    api.labelWidth = tl.LABEL_W;
    setView(0, parsed.header.span);
    follow(location.hash);
    address.start(linkNow());  // the page's address is rewritten only once the view or the rows change
    requestAnimationFrame(function () {  // after the first paint, once the page's end (the detail) is read
      if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", loadDetail); } else {
        setTimeout(loadDetail, 0);
      }
    });
  }

  function loadDetail() {
    var detailBlock = document.getElementById("run-timeline-detail");
    var detail = detailBlock ? detailBlock.textContent.trim() : "";
    if (!detail) { api.detailLoaded = true; return; }
    Promise.resolve().then(function () { return codec.inflate(codec.bytesOf(detail)); }).then(function (buffer) {
      codec.parseDetail(buffer, tl.data);
      codec.threadSelves(tl.data);  // the threads whose rows were waiting for their events
      laidFor = null;  // rows with nothing in view, told from their events now rather than their levels
      tl.data.rows.forEach(function (row) { if (row.detail) { stats.summarize(row, tl.data.header.names.length); } });
      api.detailLoaded = true;
      if (tl.search) { var current = tl.search.current; find(tl.search.query); tl.search.current = current; }
      if (tl.selected) { pick(tl.selected.row, tl.selected.index); }  // its links were not read before
      if (tl.selection) { select(tl.selection.t0, tl.selection.t1, tl.selection.rows, tl.selection.y0, tl.selection.y1); }
      schedule();
    }).catch(function (error) { status.textContent = "the timeline's events could not be read: " + error; });
  }

  // the rows laid out again (their state or, with empty rows hidden, the view changed)
  function relayout() {
    var laid = rowsOf.layout(tl.data, tl.rowState, KIND_NAMES, tl.AXIS_H, tl.t0, tl.t1);
    laidFor = tl.t0 + ":" + tl.t1;
    tl.layout = laid.places;
    tl.placeOfRow = laid.placeOfRow;
    canvas.style.height = Math.max(laid.height, 60) + "px";
    api.layout = tl.layout.map(function (place) {
      return {type: place.type, y: place.y, h: place.h, group: place.row ? place.row.group : place.label,
              kind: place.row ? place.row.kind : null, index: place.row ? place.index : null,
              pinned: Boolean(place.pinned), process: place.row ? place.row.process : (place.process === undefined ? null : place.process),
              folded: Boolean(place.folded)};
    });
    api.rowState = tl.rowState;
    section.querySelectorAll("[data-tl-kind]").forEach(function (button) {
      button.setAttribute("aria-pressed", String(tl.rowState.hiddenKinds.indexOf(button.getAttribute("data-tl-kind")) < 0));
    });
    emptyBox.checked = tl.rowState.hideEmpty;
  }

  function setRows(state) {
    tl.rowState = state;
    relayout();
    schedule();
  }

  // the view as a link says it: the window (or the frame the view was fitted to), the selection, the search, rows
  /** @returns {ViewLink} */
  function linkNow() {
    var whole = tl.t0 <= 0 && tl.t1 >= tl.data.header.span, state = tl.rowState;
    return {window: whole || tl.linkFrame !== null ? null : [tl.origin + tl.t0, tl.origin + tl.t1],
            selection: tl.selection ? [tl.origin + tl.selection.t0, tl.origin + tl.selection.t1] : null,
            frame: tl.linkFrame, search: tl.search ? tl.search.query : (api.search && api.search.frame !== undefined &&
              api.search.frame === tl.linkFrame ? api.search.query : null), pins: state.pins, folds: state.folds, hiddenKinds: state.hiddenKinds,
            hideEmpty: state.hideEmpty, selectionRows: tl.selection && tl.selection.rows.join() !== rowsBetween(0, 0).join() ?
              tl.selection.rows : null};
  }

  // a link's view (#frame=N, #window=...&search=...&pin=...): the view, selection, search and rows it names
  function follow(fragment) {
    var link = tools.linkOf(fragment);
    var rowCount = tl.data.rows.length, processes = rowsOf.processNames(tl.data).length;
    if (link.pins || link.folds || link.hiddenKinds || link.hideEmpty !== null) {  // what names no row is left out
      setRows({pins: (link.pins || []).filter(function (r) { return r < rowCount; }),
               folds: (link.folds || []).filter(function (p) { return p < processes; }),
               hiddenKinds: link.hiddenKinds || [], hideEmpty: Boolean(link.hideEmpty)});
    }
    if (link.window) { setView(link.window[0] - tl.origin, link.window[1] - tl.origin); }
    if (tl.rowState.hideEmpty) { relayout(); }  // the rows shown in the link's window
    if (link.frame !== null) { fitFrame(link.frame); }
    if (link.search) { box.value = link.search; find(link.search); }
    if (link.selection) {
      var rows = (link.selectionRows || []).filter(function (r) { return r < rowCount; });
      select(link.selection[0] - tl.origin, link.selection[1] - tl.origin, rows.length ? rows : rowsBetween(0, 0),
             tl.AXIS_H, canvas.clientHeight);
    }
    return link.window !== null || link.frame !== null || link.search !== null;
  }

  // a frame shown on a click (a frame number's link, a chart's bar): fitted here, and said in the page's address
  function showFrame(index) {
    if (!tl.data || !tl.data.header.frames[index]) { return; }
    fitFrame(index);
    address.write(linkNow(), true);
    section.scrollIntoView({block: "start"});
  }

  // search: every name that holds the query, their events over the run, and the next or previous one; "frame N"
  // (or "iteration N") shows that frame
  function find(query) {
    var frame = /^\s*(?:frame|iteration)\s+(\d+)\s*$/i.exec(query);
    if (frame && tl.data.header.frames[parseInt(frame[1], 10)]) {
      var index = parseInt(frame[1], 10);
      tl.search = null;
      api.search = {query: query, frame: index, names: [], total: 1, inView: 1};
      matchText.textContent = draw.unitOf(tl.data) + " " + index + ": " + tools.duration(tl.data.header.frames[index][1]);
      fitFrame(index);
      return;
    }
    if (!query.trim()) { tl.search = null; api.search = null; matchText.textContent = ""; schedule(); return; }
    var found = tools.matchNames(tl.data.header.names, query), total = 0;
    tl.data.rows.forEach(function (row) { total += tools.countMatches(row, found.flags); });
    tl.search = {query: query, flags: found.flags, names: found.names, total: total, current: null, inView: 0};
    schedule();
  }

  function step(direction) {
    if (!tl.search || !tl.search.total) { return; }
    var at = tl.search.current || {start: direction > 0 ? tl.t0 - 1 : tl.t1, row: direction > 0 ? -1 : 1e9, index: -1};
    var next = tools.stepMatch(tl.data, tl.search.flags, at, direction, function (r) { return tl.placeOfRow[r] !== null; });
    if (!next) { return; }
    tl.search.current = next;
    pick(next.row, next.index);
    var row = tl.data.rows[next.row], a = row.starts[next.index], b = Math.max(row.ends[next.index], a + 1);
    var width = tl.t1 - tl.t0;
    if (b - a > width * 0.8) { width = (b - a) * 1.25; }
    setView((a + b) / 2 - width / 2, (a + b) / 2 + width / 2);
  }

  // an event selected (or none): its details and links
  function pick(r, index) {
    tl.selected = r === null ? null : {row: r, index: index};
    tl.flows = r === null ? [] : tools.flowsOf(tl.data, r, index);
    api.selected = r === null ? null : describeEvent([r, index]);
    api.flows = tl.flows.map(function (flow) { return {from: describeEvent(flow.from), to: describeEvent(flow.to)}; });
    var text = panels.details(tl.data, tl.selected, tl.flows, KIND_NAMES);
    detailText.textContent = text;
    detailText.hidden = !text;
    schedule();
  }

  function describeEvent(at) {
    var row = tl.data.rows[at[0]], i = at[1];
    return {row: at[0], index: i, group: row.group, kind: row.kind, name: tl.data.header.names[row.names[i]],
            start: tl.origin + row.starts[i], end: tl.origin + row.ends[i]};
  }

  // a span selected over some rows: each name's figures in it
  function select(a, b, rows, y0, y1) {
    a = Math.round(a);  // whole ns: the figures and the --window cover the same span
    b = Math.max(a + 1, Math.round(b));
    var result = stats.rangeStats(tl.data, rows, a, b);
    tl.selection = {t0: a, t1: b, rows: rows, y0: y0, y1: y1, window: windowOf(a, b), result: result};
    api.selection = {start: tl.origin + a, end: tl.origin + b, rows: rows, window: tl.selection.window,
                     stats: result.stats.map(function (e) {
                       return {kind: e.kind, name: e.name, count: e.count, total: e.total, self: e.self, mean: e.mean,
                               min: e.min, max: e.max};
                     }), tsv: stats.tsv(result.stats), unread: result.unread, stacks: result.stacks};
    panels.statsPanel(panel, tl.selection, result, KIND_NAMES, {
      copyWindow: function () { copy(tl.selection.window); }, copyTsv: function () { copy(api.selection.tsv); },
      fit: fitSelection, clear: clearSelection});
    panel.hidden = false;
    schedule();
  }

  function clearSelection() {
    tl.selection = null;
    api.selection = null;
    panel.hidden = true;
    panel.textContent = "";
    schedule();
  }

  function fitSelection() {
    if (tl.selection) { setView(tl.selection.t0, tl.selection.t1); return; }
    if (tl.selected) {
      var row = tl.data.rows[tl.selected.row], a = row.starts[tl.selected.index], b = row.ends[tl.selected.index];
      var pad = Math.max(MIN_SPAN, (b - a) * 0.1);
      setView(a - pad, b + pad);
    }
  }

  function rowsBetween(y0, y1) {
    var rows = [];
    tl.layout.forEach(function (place) {
      if (place.type === "row" && place.y < y1 && place.y + place.h > y0) { rows.push(place.index); }
    });
    return rows.length ? rows : tl.layout.filter(function (p) { return p.type === "row"; }).map(function (p) { return p.index; });
  }

  function copy(text) { panels.copy(text, status); }

  function fitFrame(index) {
    var frame = tl.data.header.frames[index];
    if (!frame) { return; }
    var pad = frame[1] * 0.05;
    setView(frame[0] - pad, frame[0] + frame[1] + pad, true);
    tl.linkFrame = index;
  }

  function toggleHelp(open) {
    help.hidden = !(open === undefined ? help.hidden : open);
    api.helpOpen = !help.hidden;
    if (help.hidden) { canvas.focus({preventScroll: true}); }
  }

  // what is under the pointer, said where it is: after every paint, so that it follows a zoom or a pan
  function showTip() {
    var p = tl.pointer, found = p && !input.dragging() ? draw.hit(tl, view(), p[0], p[1]) : null;
    api.tip = found ? found.text : null;
    if (!found) { tip.hidden = true; return; }
    tip.textContent = found.text;
    tip.hidden = false;
    tip.style.left = Math.max(0, Math.min(p[0] + 12, canvas.clientWidth - 260)) + "px";
    tip.style.top = (p[1] + 14) + "px";
  }

  var input = orchestrateTimelineInput.attach({
    tl: tl, canvas: canvas, box: box, tip: tip, view: view, setView: setView, schedule: schedule, pick: pick,
    select: select, clearSelection: clearSelection, fitSelection: fitSelection, fitFrame: fitFrame,
    rowsBetween: rowsBetween, toggleHelp: toggleHelp, helpOpen: function () { return !help.hidden; }, find: find,
    step: step, setRows: setRows});
  window.addEventListener("resize", schedule);
  if (window.matchMedia) {  // the reader's system changed its scheme: the canvas drawn again in its colours
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", function () { schedule(); });
  }
  $("copy").addEventListener("click", function () { copy(windowText.textContent); });
  $("copy-link").addEventListener("click", function () { copy(address.href(linkNow())); });
  emptyBox.addEventListener("change", function () {
    setRows(Object.assign({}, tl.rowState, {hideEmpty: emptyBox.checked}));
  });
  section.querySelectorAll("[data-tl-kind]").forEach(function (button) {
    button.addEventListener("click", function () {
      var kind = button.getAttribute("data-tl-kind"), kinds = tl.rowState.hiddenKinds.filter(function (k) { return k !== kind; });
      if (kinds.length === tl.rowState.hiddenKinds.length) { kinds.push(kind); }
      setRows(Object.assign({}, tl.rowState, {hiddenKinds: kinds}));
    });
  });
  $("all").addEventListener("click", function () { if (tl.data) { setView(0, tl.data.header.span); } });
  $("help-open").addEventListener("click", function () { toggleHelp(true); });
  $("help-close").addEventListener("click", function () { toggleHelp(false); });

  links.attach({frames: function () { return tl.data ? tl.data.header.frames : null; },
                showFrame: showFrame, follow: follow});

  api.setWindow = function (a, b) { setView(a - tl.origin, b - tl.origin); };
  api.fitFrame = function (index) { fitFrame(index); };
  api.follow = follow;
  api.find = function (query) { box.value = query; find(query); };
  api.step = step;
  api.select = function (a, b, rows) {
    select(a - tl.origin, b - tl.origin, rows || rowsBetween(0, 0), tl.AXIS_H, canvas.clientHeight);
  };
  api.pick = function (r, index) { pick(r, index); };
  api.setRows = function (state) { setRows(Object.assign(rowsOf.emptyState(), state)); };
  api.link = function () { return tools.fragmentOf(linkNow()); };
  api.addressPending = function () { return address.pending(); };

  Promise.resolve().then(function () { return codec.inflate(codec.bytesOf(block.textContent.trim())); }).then(function (buffer) {
    api.inflated = performance.now();
    return codec.parse(buffer);
  }).then(build).catch(function (error) {
    status.textContent = "the timeline could not be read: " + error;
  });
}());
