// The whole-run timeline's input: the wheel, the mouse on the rows (pan, select a span, pick an event, pin a row or
// fold a process by its label), a double click's fit, the keys anywhere on the page, and the search box's. Calls back
// templates/timeline.js (``c``), which owns the view and what is selected.
var orchestrateTimelineInput = (function () {
  "use strict";
  var tools = orchestrateTimelineTools, draw = orchestrateTimelineDraw, rowsOf = orchestrateTimelineRows;
  var MIN_SPAN = tools.MIN_SPAN, DRAG_PX = 3;

  /**
   * @param {{tl: TimelineState, canvas: HTMLCanvasElement, box: HTMLInputElement, tip: HTMLElement,
   *          view: function(): View, setView: function(number, number): void, schedule: function(): void,
   *          pick: function(?number, number=): void, select: function(number, number, Array<number>, number, number): void,
   *          clearSelection: function(): void, fitSelection: function(): void, fitFrame: function(number): void,
   *          rowsBetween: function(number, number): Array<number>, toggleHelp: function(boolean=): void,
   *          helpOpen: function(): boolean, find: function(string): void, step: function(number): void,
   *          setRows: function(RowState): void}} c the timeline
   * @returns {{dragging: function(): boolean}}
   */
  function attach(c) {
    var tl = c.tl, canvas = c.canvas, box = c.box, tip = c.tip, drag = null;

    function local(event) {
      var b = canvas.getBoundingClientRect();
      return [event.clientX - b.left, event.clientY - b.top];
    }

    function zoom(factor, x) {
      var at = x === undefined || x < tl.LABEL_W ? (tl.t0 + tl.t1) / 2 : c.view().t(x), span = tl.data.header.span;
      var width = Math.min(span, Math.max(Math.min(MIN_SPAN, span), (tl.t1 - tl.t0) * factor));
      var a = at - (at - tl.t0) / (tl.t1 - tl.t0) * width;  // the time under the pointer stays under it
      c.setView(a, a + width);
    }

    function pan(fraction) {
      var shift = (tl.t1 - tl.t0) * fraction;
      c.setView(tl.t0 + shift, tl.t1 + shift);
    }

    // whether the timeline's rows are on screen: its keys work from anywhere on the page then
    function onScreen() {
      var b = canvas.getBoundingClientRect();
      return b.bottom > 0 && b.top < window.innerHeight && b.height > 0;
    }

    // plain wheel scrolls the page (as in Perfetto and Nsight); Ctrl/Cmd+wheel and a pinch (a wheel with ctrlKey)
    // zoom at the pointer; Shift+wheel and a sideways swipe pan
    canvas.addEventListener("wheel", function (event) {
      if (!tl.data) { return; }
      var sideways = Math.abs(event.deltaX) > Math.abs(event.deltaY);
      if (event.ctrlKey || event.metaKey) {
        event.preventDefault();
        zoom(Math.exp(event.deltaY * 0.002), local(event)[0]);
      } else if (event.shiftKey || sideways) {
        event.preventDefault();
        pan((sideways ? event.deltaX : event.deltaY || event.deltaX) / 1000);
      }
    }, {passive: false});
    canvas.addEventListener("mousedown", function (event) {
      if (!tl.data || event.button !== 0) { return; }
      var p = local(event);
      drag = {x: p[0], y: p[1], t0: tl.t0, t1: tl.t1, moved: false, selecting: event.shiftKey};
      if (event.shiftKey) { event.preventDefault(); }
    });
    window.addEventListener("mouseup", function (event) {
      if (!drag || !tl.data) { drag = null; return; }
      var p = local(event), was = drag;
      if (event.target !== canvas && !was.moved) { drag = null; return; }
      drag = null;
      if (was.selecting && was.moved) {
        var s = tl.selecting;
        tl.selecting = null;
        if (s && s.t1 > s.t0) { c.select(s.t0, s.t1, c.rowsBetween(s.y0, s.y1), s.y0, s.y1); } else { c.schedule(); }
      } else if (!was.moved && p[0] >= tl.LABEL_W) {
        var found = draw.hit(tl, c.view(), p[0], p[1]);
        c.pick(found && found.row !== undefined ? found.row : null, found ? found.index : 0);
      } else if (!was.moved) {  // a row's label: pinned or unpinned; a process's header: folded or unfolded
        var label = draw.hit(tl, c.view(), p[0], p[1]), next = label && label.label ? rowsOf.clicked(tl.rowState, label.label) : null;
        if (next) { c.setRows(next); }
      }
    });
    canvas.addEventListener("mousemove", function (event) {
      if (!tl.data) { return; }
      var p = local(event);
      tl.pointer = p;
      if (drag) {
        drag.moved = drag.moved || Math.abs(p[0] - drag.x) >= DRAG_PX;
        if (!drag.moved) { return; }
        if (drag.selecting) {
          var xs = [Math.max(tl.LABEL_W, Math.min(drag.x, p[0])), Math.max(tl.LABEL_W, drag.x, p[0])];
          tl.selecting = {t0: Math.max(0, c.view().t(xs[0])), t1: Math.min(tl.data.header.span, c.view().t(xs[1])),
                          y0: Math.min(drag.y, p[1]), y1: Math.max(drag.y, p[1])};
          c.schedule();
          return;
        }
        var shift = (drag.x - p[0]) * tools.view(drag.t0, drag.t1, tl.LABEL_W, (canvas.clientWidth - tl.LABEL_W)).nsPerPx;
        c.setView(drag.t0 + shift, drag.t1 + shift);
        return;
      }
      c.schedule();  // the pointer's line and time, and what is under it
    });
    canvas.addEventListener("mouseleave", function () { tip.hidden = true; tl.pointer = null; c.schedule(); });
    canvas.addEventListener("dblclick", function (event) {
      if (!tl.data) { return; }
      var p = local(event), found = draw.hit(tl, c.view(), p[0], p[1]);
      if (p[0] < tl.LABEL_W) { return; }
      if (found && found.frame !== undefined) { c.fitFrame(found.frame); return; }
      if (found && found.start !== undefined) {
        var pad = Math.max(MIN_SPAN, (found.end - found.start) * 0.1);
        c.setView(found.start - pad, found.end + pad);
        return;
      }
      var t = c.view().t(p[0]), f = tl.data.header.findings.filter(function (g) { return g.start_ns <= t && t <= g.end_ns; })[0];
      if (f) { c.setView(f.start_ns, f.end_ns); }
    });
    // keys anywhere on the page but in a text field: ? and / always, the view's keys while the rows are on screen
    // (the focus then moves to the timeline, as a click on it would)
    document.addEventListener("keydown", function (event) {
      var target = /** @type {HTMLElement} */ (event.target);
      if (!tl.data || event.ctrlKey || event.metaKey || event.altKey || event.defaultPrevented) { return; }
      if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) { return; }
      var key = event.key.toLowerCase(), x = tl.pointer ? tl.pointer[0] : undefined;
      if (event.key === "?") { c.toggleHelp(); } else if (event.key === "/") {
        box.focus();
        box.select();
      } else if (event.key === "Escape") {
        if (c.helpOpen()) { c.toggleHelp(false); } else if (tl.selection) { c.clearSelection(); } else if (tl.selected) {
          c.pick(null);
        } else { return; }
      } else if ("wasdf".indexOf(key) >= 0 && key.length === 1 && (target === canvas || onScreen())) {
        if (target !== canvas) { canvas.focus({preventScroll: true}); }
        if (key === "w") { zoom(0.8, x); } else if (key === "s") { zoom(1.25, x); } else if (key === "a") { pan(-0.1); }
        else if (key === "d") { pan(0.1); } else { c.fitSelection(); }
      } else { return; }
      event.preventDefault();
    });
    var typing = null;
    box.addEventListener("input", function () {
      clearTimeout(typing);
      typing = setTimeout(function () { if (tl.data) { c.find(box.value); } }, 120);
    });
    box.addEventListener("keydown", function (event) {
      if (!tl.data) { return; }
      if (event.key === "Enter") {
        clearTimeout(typing);
        if (!tl.search || tl.search.query !== box.value) { c.find(box.value); }
        c.step(event.shiftKey ? -1 : 1);
        event.preventDefault();
      } else if (event.key === "Escape") {
        box.value = "";
        c.find("");
        canvas.focus({preventScroll: true});
      }
    });

    return {dragging: function () { return drag !== null; }};
  }

  return {attach: attach};
}());
