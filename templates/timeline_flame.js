// The whole-run timeline's flame graph: one thread's CPU samples over the selected span (else the view), as Perfetto
// and speedscope draw one: the outermost functions on top, each function as wide as the samples in it (its own
// and its callees'), heaviest first, in its name's colour. A click on a function zooms to it (its callers stay
// above it, full width, with their counts: a click on one of them, or on "all", zooms back out); the thread is picked among those
// with samples (at first the one with the most in the span). Redrawn a moment after the span changes. Its figures
// (counts) are pure; its drawing is on its own canvas.
var orchestrateTimelineFlame = (function () {
  "use strict";
  var tools = orchestrateTimelineTools, search = orchestrateTimelineData.search;
  var ROW_H = 16, MAX_DEPTH = 64, MIN_W = 0.5, BAR_INK = "#1d2330", WAIT_MS = 150;

  // the stack tree's shape, once: each node's children, the outermost nodes, and every node deepest first
  function prepare(data) {
    var parents = data.stacks.parents, n = parents.length, children = [], roots = [], depth = new Int32Array(n);
    for (var k = 0; k < n; k++) { children.push([]); }
    for (k = 0; k < n; k++) {
      if (parents[k] > 0) { children[parents[k] - 1].push(k); } else { roots.push(k); }
    }
    var stack = roots.slice();
    while (stack.length) {
      var node = stack.pop();
      children[node].forEach(function (child) { depth[child] = depth[node] + 1; stack.push(child); });
    }
    var order = Array.from(depth.keys()).sort(function (x, y) { return depth[y] - depth[x]; });
    return {children: children, roots: roots, order: order, depth: depth};
  }

  // each node's samples in [a, b) of one row of samples, its callees' included; and how many samples
  function counts(data, row, a, b, shape) {
    var parents = data.stacks.parents, all = new Float64Array(parents.length), total = 0;
    for (var i = search(row.starts, a, true); i < row.starts.length && row.starts[i] < b; i++) {
      all[row.stacks[i]]++;
      total++;
    }
    shape.order.forEach(function (k) { if (parents[k] > 0) { all[parents[k] - 1] += all[k]; } });
    return {all: all, total: total};
  }

  // the bars of the graph zoomed to ``focus`` (a node, or -1: every outermost function), width ``width``: the
  // focus's callers first (full width), then its subtree, each bar {node, x, w, depth, count}
  function bars(data, shape, found, focus, width) {
    var out = [], parents = data.stacks.parents, path = [];
    for (var up = focus; up >= 0; up = parents[up] - 1) { path.unshift(up); }
    var top = path.length ? path.length - 1 : 0, whole = focus >= 0 ? found.all[focus] : found.total;
    out.push({node: -1, x: 0, w: width, depth: 0, count: found.total, path: true});
    path.forEach(function (node, d) {  // the focus and its callers: full width, their counts said
      out.push({node: node, x: 0, w: width, depth: d + 1, count: found.all[node], path: true});
    });
    function place(nodes, x, depth) {
      if (depth > MAX_DEPTH) { return; }
      nodes.slice().sort(function (p, q) { return found.all[q] - found.all[p]; }).forEach(function (node) {
        var w = whole ? width * found.all[node] / whole : 0;
        if (w < MIN_W) { return; }
        out.push({node: node, x: x, w: w, depth: depth, count: found.all[node], path: false});
        place(shape.children[node], x, depth + 1);
        x += w;
      });
    }
    place(focus >= 0 ? shape.children[focus] : shape.roots, 0, top + (focus >= 0 ? 2 : 1));
    return out;
  }

  /**
   * @param {HTMLElement} box the flame graph's part of the page (canvas, thread picker, span)
   * @param {{data: function(): any, span: function(): Array<number>, origin: function(): number}} timeline
   * @param {any} api the page's handle: given the graph as drawn (api.flame)
   */
  function attach(box, timeline, api) {
    var canvas = /** @type {HTMLCanvasElement} */ (box.querySelector("canvas"));
    var picker = /** @type {HTMLSelectElement} */ (box.querySelector("select"));
    var spanText = /** @type {HTMLElement} */ (box.querySelector("[data-tl-flame-span]"));
    var shape = null, rows = [], focus = -1, drawn = [], shown = null, timer = 0, picked = false;

    function rowOf() { return rows[parseInt(picker.value, 10)] || null; }

    function start(data) {
      rows = data.rows.filter(function (row) { return row.kind === "sample" && row.stacks && row.loaded; });
      if (!rows.length || !data.stacks.parents.length) { box.hidden = true; return false; }
      shape = shape || prepare(data);
      if (picker.options.length !== rows.length) {
        picker.textContent = "";
        rows.forEach(function (row, k) {
          var option = document.createElement("option");
          option.value = String(k);
          option.textContent = row.group + " (" + row.count.toLocaleString("en") + " samples)";
          picker.appendChild(option);
        });
      }
      box.hidden = false;
      return true;
    }

    // the graph of the span now, drawn a moment after it stops changing
    function update() {
      var data = timeline.data();
      if (!data || !start(data)) { return; }
      var span = timeline.span(), key = span.join(":") + ":" + picker.value + ":" + focus;
      if (key === shown) { return; }
      clearTimeout(timer);
      timer = setTimeout(function () { draw(span, key); }, shown === null ? 0 : WAIT_MS);
    }

    function draw(span, key) {
      var data = timeline.data();
      if (!picked) {  // at first the thread with the most samples in the span (another one: from its top)
        var most = -1, was = picker.value;
        rows.forEach(function (row, k) {
          var n = search(row.starts, span[1], false) - search(row.starts, span[0], true);
          if (n > most) { most = n; picker.value = String(k); }
        });
        if (picker.value !== was) { focus = -1; }
        key = span.join(":") + ":" + picker.value + ":" + focus;
      }
      var row = rowOf(), found = counts(data, row, span[0], span[1], shape), width = canvas.clientWidth;
      drawn = bars(data, shape, found, focus, width);
      var depth = drawn.reduce(function (d, bar) { return Math.max(d, bar.depth); }, 0) + 1;
      var ratio = window.devicePixelRatio || 1, height = depth * ROW_H;
      canvas.style.height = height + "px";
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
      var ctx = canvas.getContext("2d");
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      drawn.forEach(function (bar) {
        var name = nameOf(data, bar.node), y = bar.depth * ROW_H;
        ctx.fillStyle = bar.node < 0 ? "#c9d1de" : tools.colourOf(name);
        ctx.fillRect(bar.x, y, Math.max(MIN_W, bar.w - (bar.w > 3 ? 1 : 0)), ROW_H - 1);
        if (bar.w > 30) {
          var fits = Math.floor((bar.w - 6) / 6.1), text = !bar.path ? name : name + ", " + samples(bar.count) +
            (bar.node < 0 ? "" : " (" + (100 * bar.count / Math.max(1, found.total)).toFixed(1) + " % of them)");
          ctx.fillStyle = BAR_INK;
          ctx.fillText(text.length > fits ? text.slice(0, Math.max(1, fits - 1)) + "\u2026" : text, bar.x + 3, y + ROW_H / 2);
        }
      });
      shown = key;
      var origin = timeline.origin();
      spanText.textContent = tools.seconds(origin + span[0]) + " s to " + tools.seconds(origin + span[1]) + " s (" +
        tools.duration(span[1] - span[0]) + "), " + samples(found.total);
      api.flame = {thread: row.group, window: [origin + span[0], origin + span[1]], total: found.total,
                   focus: focus >= 0 ? nameOf(data, focus) : null, width: width,
                   bars: drawn.map(function (bar) {
                     return {name: nameOf(data, bar.node), count: bar.count, depth: bar.depth, x: bar.x, w: bar.w};
                   })};
    }

    function samples(n) { return n.toLocaleString("en") + (n === 1 ? " sample" : " samples"); }

    function nameOf(data, node) { return node < 0 ? "all" : data.header.names[data.stacks.frames[node]]; }

    function barAt(event) {
      var b = canvas.getBoundingClientRect(), x = event.clientX - b.left, y = event.clientY - b.top;
      return drawn.filter(function (bar) {
        return bar.depth === Math.floor(y / ROW_H) && x >= bar.x && x < bar.x + Math.max(bar.w, 1);
      })[0] || null;
    }

    canvas.addEventListener("click", function (event) {
      var bar = barAt(event);
      if (!bar) { return; }
      focus = bar.node === focus ? (focus >= 0 ? timeline.data().stacks.parents[focus] - 1 : -1) : bar.node;
      update();
    });
    canvas.addEventListener("mousemove", function (event) {
      var bar = barAt(event), data = timeline.data();
      canvas.title = bar && data ? nameOf(data, bar.node) + ": " + samples(bar.count) + " (" +
        (100 * bar.count / Math.max(1, drawn[0].count)).toFixed(1) + " % of the span's)" : "";
    });
    picker.addEventListener("change", function () { picked = true; focus = -1; update(); });
    window.addEventListener("resize", function () { shown = null; update(); });
    return {update: update};
  }

  return {attach: attach, prepare: prepare, counts: counts};
}());
