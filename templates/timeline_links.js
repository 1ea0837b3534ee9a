// The page's ways to a frame on the whole-run timeline: a frame number anywhere on the page (an element with
// data-frame), a click on a chart of frames, and the page's address (#frame=N, #window=...), which the timeline
// keeps as its view (address). Reads the frames and calls back the timeline (templates/timeline.js) to show one.
var orchestrateTimelineLinks = (function () {
  "use strict";
  var NEAR_PX = 4;

  /**
   * @param {{frames: function(): ?Array<Array<number>>, showFrame: function(number): void,
   *          follow: function(string): boolean}} timeline
   */
  function attach(timeline) {
    // a click on a frame number, or on a bar that stands for frames, shows that frame
    document.addEventListener("click", function (event) {
      var target = event.target instanceof Element ? event.target.closest("[data-frame]") : null;
      if (!target || !timeline.frames()) { return; }
      event.preventDefault();
      timeline.showFrame(parseInt(/** @type {HTMLElement} */ (target).dataset.frame || "", 10));
    });
    window.addEventListener("hashchange", function () { if (timeline.frames()) { timeline.follow(location.hash); } });

    // a click on a chart of frames (frame time, the GPU's time per frame) shows the frame under the pointer: on
    // the frame-time chart the slowest within a few pixels of it, as a spike the eye aims at is one frame among
    // many a pixel holds (the timeline knows frames' times, not the GPU's: that chart's click is the frame under it)
    document.querySelectorAll("svg.chart[data-index-axis]").forEach(function (element) {
      var chart = /** @type {SVGSVGElement} */ (element);
      chart.addEventListener("click", function (event) {
        var frames = timeline.frames();
        if (!frames || (event.target instanceof Element && event.target.closest("[data-frame]"))) { return; }
        var axis = chart.dataset.indexAxis.split(",").map(Number), point = chart.createSVGPoint();
        var matrix = chart.getScreenCTM();
        point.x = event.clientX;
        point.y = event.clientY;
        var x = point.matrixTransform(matrix.inverse()).x, perUnit = (axis[2] - 1) / Math.max(1, axis[1] - axis[0]);
        var near = Math.max(1, NEAR_PX / Math.max(1e-9, matrix.a) * perUnit), at = (x - axis[0]) * perUnit;
        var lo = Math.max(0, Math.floor(at - near)), hi = Math.min(axis[2] - 1, Math.ceil(at + near)), best = -1;
        if (chart.dataset.chart !== "frame-series") { lo = hi = Math.max(0, Math.min(axis[2] - 1, Math.round(at))); }
        for (var i = lo; i <= hi; i++) { if (frames[i] && (best < 0 || frames[i][1] > frames[best][1])) { best = i; } }
        if (best >= 0) { timeline.showFrame(best); }
      });
    });
  }

  // the page's address as the timeline's view: rewritten (replaceState: no new history entry, no hashchange) a
  // moment after the view, selection, search or rows change, so that a reload or a copied address opens the same
  // view; never before the first change, so an address the page was opened with (a section's) stays until then
  function address() {
    var written = null, pending = null, timer = 0, tools = orchestrateTimelineTools;
    function put() {
      timer = 0;
      if (pending === null || pending === written) { return; }
      written = pending;
      history.replaceState(history.state, "", written || location.pathname + location.search);
    }
    return {
      /** @param {ViewLink} link the view the page opened on */
      start: function (link) { written = tools.fragmentOf(link); },
      /** @param {ViewLink} link @param {boolean} [now] */
      write: function (link, now) {
        if (written === null) { return; }
        pending = tools.fragmentOf(link);
        if (now) { clearTimeout(timer); put(); } else if (!timer && pending !== written) { timer = setTimeout(put, 150); }
      },
      /** @returns {boolean} whether a rewrite is waiting for its moment */
      pending: function () { return timer !== 0; },
      /** @param {ViewLink} link @returns {string} the page's address with the link's fragment */
      href: function (link) { return location.href.split("#")[0] + tools.fragmentOf(link); }
    };
  }

  return {attach: attach, address: address};
}());
