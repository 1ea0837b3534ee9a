// The whole-run timeline's rows as the page lays them out, as Perfetto and Nsight Systems do: the frames, the
// pinned rows (in the order they were pinned), then each process under a header row that folds it, its threads'
// rows (those of a hidden kind left out, and when asked those with nothing in view), then the board's series.
// Pure: the data, the rows' state and the view in; places (type, y, h, label...) out.
var orchestrateTimelineRows = (function () {
  "use strict";
  var tools = orchestrateTimelineTools, search = orchestrateTimelineData.search;
  var ROW_H = 14, LANE_H = 8, FRAME_H = 16, BOARD_H = 30, HEAD_H = 18;

  /** @returns {RowState} */
  function emptyState() { return {pins: [], folds: [], hiddenKinds: [], hideEmpty: false}; }

  // what the run's frames are: "frame", or "iteration" (a CUDA or TensorRT run's); pages from before say nothing
  function unitOf(parsed) { return parsed.header.unit || "frame"; }

  // a row's process (pages made before processes were written: one, unnamed)
  function processOf(row) { return row.process === undefined ? 0 : row.process; }

  function processNames(parsed) { return parsed.header.processes || ["the run's threads"]; }

  // whether a row has an event in [t0, t1): its events once read, else its coarsest level's runs
  function hasEvents(row, t0, t1) {
    var i;
    if (row.loaded) {
      var s = tools.stretch(row, t0, t1);
      if (s.before.length) { return true; }
      for (i = s.lo; i < s.hi; i++) { if (tools.overlaps(row, i, t0, t1)) { return true; } }
      return false;
    }
    var level = row.levels[row.levels.length - 1];
    if (!level) { return true; }
    var w = level.width, hi = search(level.first, t1 / w, true);
    for (i = Math.max(0, search(level.first, t0 / w, true) - 1); i < hi; i++) {
      if (level.last[i] * w > t0) { return true; }
    }
    return false;
  }

  function rowPlace(row, r, kindNames, y, pinned) {
    var h = row.kind === "sample" ? ROW_H : ROW_H + (row.lanes - 1) * LANE_H;
    return {type: "row", row: row, index: r, kindName: kindNames[row.kind] || row.kind, y: y, h: h, pinned: pinned};
  }

  /**
   * The canvas's places top down from ``top``, and each data row's place (null: not shown).
   * @param {any} parsed the data @param {RowState} state @param {Object<string, string>} kindNames
   * @param {number} top @param {number} t0 @param {number} t1 the view, for rows with nothing in view
   */
  function layout(parsed, state, kindNames, top, t0, t1) {
    var y = top, places = [], placeOfRow = parsed.rows.map(function () { return null; });
    var names = processNames(parsed), pinned = {}, order = [], members = {};
    function push(place) { places.push(place); y += place.h; return place; }
    if (parsed.header.frames.length) { push({type: "frames", label: unitOf(parsed) + "s", y: y, h: FRAME_H}); }
    var pins = state.pins.filter(function (r) { return parsed.rows[r] && !pinned[r] && (pinned[r] = true); });
    if (pins.length) { push({type: "process", label: "pinned", process: -1, folded: false, rows: pins.length, y: y, h: HEAD_H}); }
    pins.forEach(function (r) { placeOfRow[r] = push(rowPlace(parsed.rows[r], r, kindNames, y, true)); });
    parsed.rows.forEach(function (row, r) {
      var p = processOf(row);
      if (!members[p]) { members[p] = []; order.push(p); }
      members[p].push(r);
    });
    order.forEach(function (p) {
      var folded = state.folds.indexOf(p) >= 0, shown = members[p].filter(function (r) {
        var row = parsed.rows[r];
        return !pinned[r] && state.hiddenKinds.indexOf(row.kind) < 0 && (!state.hideEmpty || hasEvents(row, t0, t1));
      });
      push({type: "process", label: names[p] || "process " + p, process: p, folded: folded, rows: members[p].length,
            shown: shown.length, y: y, h: HEAD_H});
      if (folded) { return; }
      shown.forEach(function (r) { placeOfRow[r] = push(rowPlace(parsed.rows[r], r, kindNames, y, false)); });
    });
    Object.keys(parsed.header.board).forEach(function (name) {
      push({type: "board", name: name, label: name, y: y, h: BOARD_H});
    });
    return {places: places, placeOfRow: placeOfRow, height: y};
  }

  // a row's label in full, as its tooltip says it
  function labelOf(place) {
    if (place.type === "row") {
      return place.row.group + " \u00b7 " + place.kindName + "\n" + place.row.count.toLocaleString("en") + " events" +
        "\nclick: " + (place.pinned ? "unpin it" : "pin it to the top");
    }
    if (place.type === "process") {
      return place.label + "\n" + (place.process < 0 ? place.rows + " rows pinned" :
        place.rows + " rows" + (place.shown !== undefined && place.shown < place.rows && !place.folded ?
          ", " + place.shown + " shown" : "") + "\nclick: " + (place.folded ? "unfold it" : "fold it"));
    }
    return place.label;
  }

  // the state after a click on a place's label: a row pinned or unpinned, a process folded or unfolded
  /** @param {RowState} state @param {any} place @returns {?RowState} */
  function clicked(state, place) {
    var next = {pins: state.pins.slice(), folds: state.folds.slice(), hiddenKinds: state.hiddenKinds.slice(),
                hideEmpty: state.hideEmpty};
    if (place.type === "row") {
      var at = next.pins.indexOf(place.index);
      if (at >= 0) { next.pins.splice(at, 1); } else { next.pins.push(place.index); }
      return next;
    }
    if (place.type === "process" && place.process >= 0) {
      var f = next.folds.indexOf(place.process);
      if (f >= 0) { next.folds.splice(f, 1); } else { next.folds.push(place.process); }
      return next;
    }
    return null;
  }

  return {layout: layout, emptyState: emptyState, labelOf: labelOf, clicked: clicked, hasEvents: hasEvents,
          unitOf: unitOf, processNames: processNames};
}());
