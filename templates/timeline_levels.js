// The whole-run timeline's dense rows: a row with more events in view than can be drawn one by one is drawn from
// its levels of detail (report/levels.py makes them: per bin of a width, how much its events cover it, or how many
// samples it holds), at most one shape per pixel. Drawn for templates/timeline_draw.js.
var orchestrateTimelineLevels = (function () {
  "use strict";
  var tools = orchestrateTimelineTools, search = orchestrateTimelineData.search, FULL = 255;
  var SAMPLE_ALPHAS = [0.475, 0.65, 0.825, 1];  // a pixel's samples: up to 63 in a bin, 127, 191, more
  var COVER_ALPHAS = [0.0625, 0.1875, 0.3125, 0.4375, 0.5625, 0.6875, 0.8125, 1];  // a pixel covered [k/8, (k+1)/8)

  // the coarsest level whose bins are no wider than a pixel (the finest when every level's are wider)
  function levelFor(row, nsPerPx) {
    var chosen = row.levels[0];
    row.levels.forEach(function (level) { if (level.width <= nsPerPx) { chosen = level; } });
    return chosen;
  }

  // a level's runs in view folded into the pixels they fall in, then drawn as stretches of pixels of one shade:
  // at most one shape per pixel, whatever the events. A row of calls or GPU work is shaded as much as its events
  // cover each pixel (the bins' coverage over the pixel's time), with a line along its foot where any event is, so
  // brief work is neither drawn busy nor lost; a row of samples by the most samples a bin of the pixel holds.
  // Under a search, the pixels that hold an event it finds are marked (the events are read for it once loaded)
  /**
   * @param {CanvasRenderingContext2D} ctx @param {any} v the paint's view (timeline_draw.js's) @param {any} place
   * @param {string} colour the row kind's colour @param {string} ink the marks' colour
   */
  function paint(ctx, v, place, colour, ink) {
    var tl = v.tl, row = place.row, level = levelFor(row, v.nsPerPx), w = level.width, pixels = Math.ceil(v.width);
    var result = {shapes: 0, visible: 0, matches: 0, inked: 0}, t0 = tl.t0, t1 = tl.t1, sample = row.kind === "sample";
    var lo = Math.max(0, search(level.first, t0 / w, true) - 1), hi = search(level.first, t1 / w, true);
    var columns = new Uint8Array(pixels + 1), cover = new Float64Array(pixels + 1), scale = 1 / v.nsPerPx, p;
    for (var i = lo; i < hi; i++) {
      var a = level.first[i] * w, b = level.last[i] * w, value = level.values[i];
      if (b <= t0) { continue; }
      var p0 = Math.max(0, Math.floor((a - t0) * scale)), p1 = Math.min(pixels, Math.max(p0 + 1, Math.ceil((b - t0) * scale)));
      for (p = p0; p < p1; p++) {
        if (value > columns[p]) { columns[p] = value; }
        if (!sample) {
          var edge = t0 + p * v.nsPerPx;
          cover[p] += Math.max(0, Math.min(b, edge + v.nsPerPx) - Math.max(a, edge)) * value / FULL;
        }
      }
    }
    var dim = tl.search ? 0.3 : 1, y = place.y + 1, h = place.h - 2;
    ctx.fillStyle = colour;
    if (sample) {
      result.shapes += shades(ctx, columns, pixels, tl.LABEL_W, y, h, SAMPLE_ALPHAS.map(function (x) { return x * dim; }),
                              function (j) { return columns[j] ? Math.min(3, columns[j] >> 6) : -1; });
    } else {
      for (p = 0; p < pixels; p++) { cover[p] = Math.min(1, cover[p] * scale); result.inked += cover[p]; }
      result.inked /= Math.max(1, v.width);
      result.shapes += shades(ctx, columns, pixels, tl.LABEL_W, y, h, COVER_ALPHAS.map(function (x) { return x * dim; }),
                              function (j) { return columns[j] ? Math.min(COVER_ALPHAS.length - 1, Math.floor(cover[j] * COVER_ALPHAS.length)) : -1; });
      result.shapes += shades(ctx, columns, pixels, tl.LABEL_W, y + h - 1, 1, [dim],
                              function (j) { return columns[j] && cover[j] < 1 ? 0 : -1; });
    }
    if (tl.search && row.loaded) {  // the pixels its matches touch, each filled once
      var marks = new Uint8Array(pixels + 1), flags = tl.search.flags, names = row.names, starts = row.starts;
      var ends = row.ends, s = tools.stretch(row, t0, t1), filled = 0;
      var mark = function (j) {
        result.matches++;
        var m1 = Math.min(pixels, Math.max(Math.floor((starts[j] - t0) * scale) + 1, Math.ceil((ends[j] - t0) * scale)));
        for (var q = Math.max(filled, Math.floor((starts[j] - t0) * scale), 0); q < m1; q++) { marks[q] = 1; }
        if (m1 > filled) { filled = m1; }
      };
      s.before.forEach(function (j) { if (flags[names[j]]) { mark(j); } });
      filled = 0;
      for (var j = s.lo; j < s.hi; j++) {
        if (flags[names[j]] && (sample ? starts[j] >= t0 : ends[j] > t0)) { mark(j); }
      }
      ctx.fillStyle = ink;
      result.shapes += shades(ctx, marks, pixels, tl.LABEL_W, y, 3, [1], function (x) { return marks[x] ? 0 : -1; });
    }
    return result;
  }

  // stretches of pixels of one shade (shadeOf(pixel): an index into alphas, -1 none) as one path per shade
  function shades(ctx, columns, pixels, left, y, h, alphas, shadeOf) {
    var buckets = alphas.map(function () { return []; }), shade = -1, from = 0, shapes = 0;
    for (var x = 0; x <= pixels; x++) {
      var b = x < pixels ? shadeOf(x) : -1;
      if (b === shade) { continue; }
      if (shade >= 0) { buckets[shade].push(left + from, x - from); }
      shade = b;
      from = x;
    }
    buckets.forEach(function (rects, bucket) {
      if (!rects.length) { return; }
      ctx.globalAlpha = alphas[bucket];
      ctx.beginPath();
      for (var j = 0; j < rects.length; j += 2) { ctx.rect(rects[j], y, rects[j + 1], h); }
      ctx.fill();
      shapes += rects.length / 2;
    });
    ctx.globalAlpha = 1;
    return shapes;
  }

  return {paint: paint, levelFor: levelFor};
}());
