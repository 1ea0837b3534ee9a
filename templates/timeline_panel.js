// The whole-run timeline's text under its canvas: a selected event's details with the GPU work it is linked to,
// and a selected span's statistics per name (a table with each name's durations as a small histogram, copyable
// as TSV, and the span as --window). Builds elements with textContent only: a name never becomes markup.
var orchestrateTimelinePanel = (function () {
  "use strict";
  var tools = orchestrateTimelineTools;
  var SHOWN = 60;  // rows of the table; the TSV holds them all

  function element(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) { e.textContent = text; }
    if (cls) { e.className = cls; }
    return e;
  }

  function describe(data, at, kindNames) {
    var row = data.rows[at[0]], i = at[1];
    return data.header.names[row.names[i]] + " (" + row.group + " \u00b7 " + (kindNames[row.kind] || row.kind) + ", " +
      tools.seconds(data.header.origin + row.starts[i]) + " s, " + tools.duration(row.ends[i] - row.starts[i]) + ")";
  }

  // the selected event and its links, as lines of text (a CPU sample: its whole stack)
  function details(data, picked, flows, kindNames) {
    if (!picked) { return ""; }
    var row = data.rows[picked.row], lines = ["selected: " + describe(data, [picked.row, picked.index], kindNames)];
    if (row.stacks) { return lines[0] + tools.stackText(data, row.stacks[picked.index], Infinity); }
    if (row.self && row.self[picked.index] !== row.ends[picked.index] - row.starts[picked.index]) {
      lines.push("self time (less what nests in it on its thread): " + tools.duration(row.self[picked.index]));
    }
    var gpu = row.kind === "cuda_kernel" || row.kind === "memcpy" || row.kind === "opengl_gpu";
    var linkable = row.kind === "opengl" || row.kind === "cuda_api" || gpu || row.kind === "nvtx";
    if (!data.links && linkable) {
      lines.push(data.header.links ? "its links to GPU work are still being read" :
        "no links: the capture records no correlation between calls and GPU work");
    } else if (flows.length) {
      var shown = flows.slice(0, 6).map(function (flow) {
        if (gpu) {
          var calls = flow.first[1] === flow.last[1] ? describe(data, flow.first, kindNames) :
            describe(data, flow.first, kindNames) + " to " + data.header.names[data.rows[flow.last[0]].names[flow.last[1]]] +
            " (" + (flow.last[1] - flow.first[1] + 1) + " calls)";
          return "queued by " + calls;
        }
        var to = data.rows[flow.to[0]], lag = to.starts[flow.to[1]] - data.rows[flow.from[0]].starts[flow.from[1]];
        return "queued " + describe(data, flow.to, kindNames) + ", starting " + tools.duration(lag) + " after the call";
      });
      if (flows.length > 6) { shown.push("and " + (flows.length - 6) + " more links, drawn as arrows"); }
      lines = lines.concat(shown);
    } else if (row.kind === "opengl" || row.kind === "cuda_api") {
      lines.push("queued no GPU work nsys recorded");
    } else if (row.kind === "nvtx") {
      lines.push("its thread's calls in it queued no GPU work nsys recorded");
    }
    return lines.join("\n");
  }

  function histogram(bins, low, high) {
    var box = element("div", null, "tl-hist"), tallest = 0, b;
    for (b = low; b <= high; b++) { tallest = Math.max(tallest, bins[b]); }
    for (b = low; b <= high; b++) {
      var bar = element("span"), edges = tools.binEdges(b);
      bar.style.height = (bins[b] ? Math.max(8, 100 * bins[b] / tallest) : 0) + "%";
      bar.title = tools.duration(edges[0]) + " to " + tools.duration(edges[1]) + ": " + bins[b];
      box.appendChild(bar);
    }
    box.title = "durations from " + tools.duration(tools.binEdges(low)[0]) + " to " + tools.duration(tools.binEdges(high)[1]) +
      ", half an octave a bar";
    return box;
  }

  // the panel of a selected span: its head (length, rows, events, the --window, copy buttons) and its table
  function statsPanel(panel, sel, result, kindNames, handlers) {
    panel.textContent = "";
    var head = element("div", null, "tl-panel-head"), events = 0;
    result.stats.forEach(function (e) { events += e.count; });
    head.appendChild(element("strong", "Selected: " + tools.duration(sel.t1 - sel.t0)));
    head.appendChild(element("span", sel.rows.length + " rows, " + events.toLocaleString("en") + " events in " +
                                     result.stats.length + " names (overlapping the span; full durations)"));
    head.appendChild(element("code", sel.window));
    [["copy --window", handlers.copyWindow], ["copy as TSV", handlers.copyTsv], ["fit (F)", handlers.fit],
     ["clear (Esc)", handlers.clear]].forEach(function (b) {
      var button = element("button", b[0]);
      button.type = "button";
      button.addEventListener("click", b[1]);
      head.appendChild(button);
    });
    panel.appendChild(head);
    if (result.unread) {
      panel.appendChild(element("p", result.unread + " rows still being read: select again in a moment", "note"));
    }
    if (!result.stats.length) {
      panel.appendChild(element("p", "no events in this span and these rows", "note"));
      return;
    }
    var table = element("table"), cols = element("colgroup");
    ["c-kind", "", "c-num", "c-num", "c-num", "c-num", "c-num", "c-num", "c-hist"].forEach(function (c) {
      var col = element("col");
      if (c) { col.className = c; }
      cols.appendChild(col);
    });
    table.appendChild(cols);
    var top = element("tr");
    ["kind", "name", "count", "total", "self", "mean", "min", "max", "durations"].forEach(function (h) {
      top.appendChild(element("th", h));
    });
    table.appendChild(element("thead")).appendChild(top);
    var body = element("tbody");
    result.stats.slice(0, SHOWN).forEach(function (e) {
      var tr = element("tr");
      tr.appendChild(element("td", kindNames[e.kind] || e.kind));
      var name = element("td", e.name);
      name.title = e.name;
      tr.appendChild(name);
      tr.appendChild(element("td", e.count.toLocaleString("en")));
      [e.total, e.self, e.mean, e.min, e.max].forEach(function (v) {
        tr.appendChild(element("td", v === null ? "\u2013" : tools.duration(v)));
      });
      var cell = element("td");
      if (e.total !== null) {
        var low = tools.BINS, high = 0;
        for (var b = 0; b < tools.BINS; b++) { if (e.bins[b]) { low = Math.min(low, b); high = Math.max(high, b); } }
        cell.appendChild(histogram(e.bins, low, high));
      }
      tr.appendChild(cell);
      body.appendChild(tr);
    });
    table.appendChild(body);
    panel.appendChild(element("div", null, "tl-table-wrap")).appendChild(table);
    if (result.stats.length > SHOWN) {
      panel.appendChild(element("p", "and " + (result.stats.length - SHOWN) + " more names: copy as TSV for all", "note"));
    }
    if (result.stacks.length) { panel.appendChild(stacksPart(result.stacks)); }
  }

  // the selected CPU samples' heaviest call stacks: each its samples and its frames, leaf first
  function stacksPart(stacks) {
    var part = element("div", null, "tl-stacks");
    part.appendChild(element("strong", "CPU samples' heaviest call stacks (leaf first)"));
    var list = element("ol");
    stacks.forEach(function (stack) {
      var item = element("li");
      item.appendChild(element("span", stack.count.toLocaleString("en") + (stack.count === 1 ? " sample (" : " samples (") +
                                       (100 * stack.share).toFixed(1) + " %): ", "tl-stack-count"));
      item.appendChild(element("code", stack.frames.join(" \u2190 ")));
      list.appendChild(item);
    });
    part.appendChild(list);
    return part;
  }

  // text to the clipboard, or where the page cannot, a word to select it by hand
  function copy(text, status) {
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(function () { status.textContent = "copied"; },
        function () { status.textContent = "select the text to copy it"; });
    } else {
      status.textContent = "select the text to copy it";
    }
  }

  return {details: details, statsPanel: statsPanel, copy: copy};
}());
