// The whole-run timeline's overview strip: the whole run at once above the rows (each pixel's slowest frame as a
// bar, and how busy the rows are: their events' cover of the pixel, summed over the rows and scaled to the busiest
// pixel), with the view's window on it. A drag moves the window; a press outside it moves the window there first.
// Drawn for templates/timeline.js, which gives it the view and takes the window back.
var orchestrateTimelineOverview = (function () {
  "use strict";
  var tools = orchestrateTimelineTools, draw = orchestrateTimelineDraw, FULL = 255, HEIGHT = 34;

  // per pixel of the plot: the slowest frame's duration that starts in it, and the rows' summed cover
  function profile(data, pixels) {
    var span = data.header.span, frames = new Float64Array(pixels), busy = new Float64Array(pixels);
    var scale = pixels / span;
    data.header.frames.forEach(function (f) {
      var p = Math.min(pixels - 1, Math.floor(f[0] * scale));
      if (f[1] > frames[p]) { frames[p] = f[1]; }
    });
    data.rows.forEach(function (row) {
      if (row.kind === "sample" || row.kind === "state") { return; }
      var level = row.levels[row.levels.length - 1], i;
      if (level) {
        for (i = 0; i < level.first.length; i++) {
          add(busy, level.first[i] * level.width, level.last[i] * level.width, level.values[i] / FULL, scale, pixels);
        }
      } else {
        for (i = 0; i < row.starts.length; i++) { add(busy, row.starts[i], row.ends[i], 1, scale, pixels); }
      }
    });
    return {frames: frames, busy: busy};
  }

  // [a, b) ns covered ``share`` of the time, spread over the pixels it falls in (in ns of each pixel)
  function add(busy, a, b, share, scale, pixels) {
    var pa = a * scale, pb = b * scale, p0 = Math.max(0, Math.floor(pa)), p1 = Math.min(pixels, Math.ceil(pb));
    for (var p = p0; p < p1; p++) { busy[p] += share * Math.max(0, Math.min(pb, p + 1) - Math.max(pa, p)); }
  }

  /**
   * @param {HTMLCanvasElement} canvas the strip
   * @param {{data: function(): any, view: function(): Array<number>, labelWidth: number,
   *          setView: function(number, number): void}} timeline
   * @param {any} api the page's handle (window.orchestrateTimeline), given the window as drawn
   */
  function attach(canvas, timeline, api) {
    var cached = null, drag = null;
    canvas.style.height = HEIGHT + "px";

    function plot() { return {left: timeline.labelWidth, width: canvas.clientWidth - timeline.labelWidth}; }

    function paint() {
      var data = timeline.data(), box = plot();
      if (!data || box.width <= 0) { return; }
      var ratio = window.devicePixelRatio || 1, cssW = canvas.clientWidth, pixels = Math.max(1, Math.round(box.width));
      if (canvas.width !== Math.round(cssW * ratio) || canvas.height !== Math.round(HEIGHT * ratio)) {
        canvas.width = Math.round(cssW * ratio);
        canvas.height = Math.round(HEIGHT * ratio);
      }
      if (!cached || cached.pixels !== pixels || cached.loaded !== api.detailLoaded) {
        var made = profile(data, pixels);
        cached = {pixels: pixels, loaded: api.detailLoaded, found: made,
                  slowest: Math.max.apply(null, Array.from(made.frames).concat([1])),
                  busiest: Math.max.apply(null, Array.from(made.busy).concat([1e-9]))};
      }
      var ctx = canvas.getContext("2d"), c = draw.colours, found = cached.found, view = timeline.view();
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      ctx.clearRect(0, 0, cssW, HEIGHT);
      ctx.fillStyle = c.paper;
      ctx.fillRect(0, 0, box.left, HEIGHT);
      ctx.fillStyle = c.strip;
      ctx.fillRect(box.left, 0, box.width, HEIGHT);
      var slowest = cached.slowest, busiest = cached.busiest;
      ctx.fillStyle = c.soft;
      ctx.globalAlpha = 0.45;
      for (var p = 0; p < pixels; p++) {  // how busy: the bottom half
        var h = (HEIGHT / 2 - 2) * found.busy[p] / busiest;
        if (h > 0) { ctx.fillRect(box.left + p, HEIGHT - h, 1, h); }
      }
      ctx.globalAlpha = 1;
      ctx.fillStyle = draw.kindColour("cuda_kernel");
      for (p = 0; p < pixels; p++) {  // each pixel's slowest frame: bars from the top half's foot
        var fh = (HEIGHT / 2 - 2) * found.frames[p] / slowest;
        if (fh > 0) { ctx.fillRect(box.left + p, HEIGHT / 2 - fh, 1, Math.max(1, fh)); }
      }
      var span = data.header.span, x0 = box.left + view[0] / span * box.width, x1 = box.left + view[1] / span * box.width;
      var w = Math.max(2, x1 - x0);
      ctx.fillStyle = "rgba(128, 136, 150, 0.35)";  // outside the window, dimmed
      ctx.fillRect(box.left, 0, Math.max(0, x0 - box.left), HEIGHT);
      ctx.fillRect(x0 + w, 0, Math.max(0, box.left + box.width - x0 - w), HEIGHT);
      ctx.strokeStyle = c.ink;
      ctx.lineWidth = 1.5;
      ctx.strokeRect(x0 + 0.75, 0.75, w - 1.5, HEIGHT - 1.5);
      ctx.lineWidth = 1;
      ctx.fillStyle = c.soft;
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      ctx.fillText("first to last event: " + tools.duration(span), 4, HEIGHT / 2);
      api.overview = {left: box.left, width: box.width, x0: x0, x1: x0 + w, start: data.header.origin,
                      end: data.header.origin + span};
    }

    function timeAt(x) {
      var box = plot(), data = timeline.data();
      return Math.max(0, Math.min(1, (x - box.left) / box.width)) * data.header.span;
    }

    function local(event) { return event.clientX - canvas.getBoundingClientRect().left; }

    canvas.addEventListener("mousedown", function (event) {
      if (!timeline.data() || event.button !== 0 || local(event) < plot().left) { return; }
      var view = timeline.view(), t = timeAt(local(event)), width = view[1] - view[0];
      if (t < view[0] || t > view[1]) {  // outside the window: the window centred there first
        timeline.setView(t - width / 2, t + width / 2);
        view = timeline.view();
      }
      drag = {t: t, view: view};
      event.preventDefault();
    });
    window.addEventListener("mousemove", function (event) {
      if (!drag) { return; }
      var shift = timeAt(local(event)) - drag.t;
      timeline.setView(drag.view[0] + shift, drag.view[1] + shift);
    });
    window.addEventListener("mouseup", function () { drag = null; });
    return {paint: paint};
  }

  return {attach: attach, HEIGHT: HEIGHT};
}());
