// Sortable tables and "show all": the page's only script (no library, no network).
(function () {
  "use strict";
  function showAll(wrap) {
    var more = wrap.querySelector("template.more-rows");
    if (!more) { return; }
    wrap.querySelector("tbody").appendChild(more.content);
    more.remove();
    var button = wrap.querySelector("button.show-all");
    if (button) { button.remove(); }
  }
  function sortBy(th) {
    var table = th.closest("table");
    showAll(table.closest(".table-wrap"));
    var column = Array.prototype.indexOf.call(th.parentNode.children, th);
    var numeric = th.getAttribute("data-numeric") === "y";
    var descending = th.getAttribute("aria-sort") ? th.getAttribute("aria-sort") === "ascending" : numeric;
    Array.prototype.forEach.call(th.parentNode.children, function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[column].getAttribute("data-v"), y = b.cells[column].getAttribute("data-v");
      var order = numeric ? (parseFloat(x || "-Infinity") - parseFloat(y || "-Infinity")) : x.localeCompare(y);
      return descending ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  }
  document.querySelectorAll("button.show-all").forEach(function (button) {
    button.addEventListener("click", function () { showAll(button.closest(".table-wrap")); });
  });
  document.querySelectorAll("table.sortable th").forEach(function (th) {
    th.addEventListener("click", function () { sortBy(th); });
    th.addEventListener("keydown", function (/** @type {KeyboardEvent} */ event) {
      if (event.key === "Enter") { sortBy(th); }
    });
  });
}());
