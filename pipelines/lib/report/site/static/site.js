/* mlperf-warehouse results site: filters and sorting for the round tables.
   Dependency-free, no network; the page works without it (all rows shown, unsorted). */
(function () {
  "use strict";

  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });

  function numberOrNull(text) {
    if (text === null || text === "") { return null; }
    var n = Number(text);
    return isNaN(n) ? null : n;
  }

  function setupTable(table) {
    var tbody = table.tBodies[0];
    var rows = Array.prototype.slice.call(tbody.rows);
    var filters = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
    var counter = document.getElementById("shown-count");

    function applyFilters() {
      var shown = 0;
      rows.forEach(function (row) {
        var visible = filters.every(function (select) {
          return !select.value || row.getAttribute("data-" + select.getAttribute("data-filter")) === select.value;
        });
        row.hidden = !visible;
        if (visible) { shown += 1; }
      });
      if (counter) { counter.textContent = shown + " of " + rows.length + " systems shown"; }
      var params = filters.filter(function (s) { return s.value; }).map(function (s) {
        return encodeURIComponent(s.getAttribute("data-filter")) + "=" + encodeURIComponent(s.value);
      });
      if (window.history && window.history.replaceState) {
        try { window.history.replaceState(null, "", params.length ? "#" + params.join("&") : "#"); } catch (e) { /* file:// in some browsers */ }
      }
    }

    // filters from the address (#accelerator=...&division=...), so a filtered view can be shared
    (window.location.hash || "").replace(/^#/, "").split("&").forEach(function (pair) {
      var kv = pair.split("=");
      if (kv.length !== 2) { return; }
      var key = decodeURIComponent(kv[0]), value = decodeURIComponent(kv[1]);
      filters.forEach(function (select) {
        if (select.getAttribute("data-filter") === key) {
          for (var i = 0; i < select.options.length; i += 1) {
            if (select.options[i].value === value) { select.value = value; }
          }
        }
      });
    });
    filters.forEach(function (select) { select.addEventListener("change", applyFilters); });
    var reset = document.getElementById("reset-filters");
    if (reset) {
      reset.addEventListener("click", function () {
        filters.forEach(function (select) { select.value = ""; });
        applyFilters();
      });
    }

    var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
    headers.forEach(function (th, index) {
      var button = th.querySelector("button.sort");
      if (!button) { return; }
      button.addEventListener("click", function () {
        var numeric = th.getAttribute("data-type") === "number";
        var ascending = th.getAttribute("aria-sort") !== "ascending";
        headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
        var keyed = rows.map(function (row, position) {
          var cell = row.cells[index];
          var raw = cell ? (cell.getAttribute("data-sort") !== null ? cell.getAttribute("data-sort") : cell.textContent.trim()) : "";
          return { row: row, key: numeric ? numberOrNull(raw) : raw, position: position };
        });
        keyed.sort(function (a, b) {
          var empty = (a.key === null || a.key === "") - (b.key === null || b.key === "");
          if (empty !== 0) { return empty; } // empty cells last, either direction
          // text: 'tpu-512' before 'tpu-1024', case-insensitive
          var order = numeric ? (a.key < b.key ? -1 : (a.key > b.key ? 1 : 0))
            : collator.compare(a.key, b.key);
          if (order !== 0) { return ascending ? order : -order; }
          return a.position - b.position;
        });
        rows = keyed.map(function (k) { return k.row; });
        rows.forEach(function (row) { tbody.appendChild(row); });
      });
    });
    applyFilters();
  }

  function start() {
    Array.prototype.forEach.call(document.querySelectorAll("table.results"), setupTable);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
}());
