// Sortable tables of the denpex-kb hub (the catalogue page). A click on a column heading sorts
// the rows by that column, a second click reverses. A cell's data-sort attribute, when present,
// is its sort key (phase and severity sort in their own order, not alphabetically); otherwise
// its text. Numbers inside keys compare as numbers. A classic script with no dependencies, so it
// runs from file:// as well; without it the table keeps the order it was generated in.
(function () {
  "use strict";

  function sortKey(row, col) {
    var cell = row.cells[col];
    if (!cell) return "";
    var key = cell.getAttribute("data-sort");
    return key !== null ? key : cell.textContent.trim();
  }

  function sortRows(table, col, direction) {
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.forEach(function (row, i) {
      row.dxOrder = i;
    });
    rows.sort(function (a, b) {
      var c = sortKey(a, col).localeCompare(sortKey(b, col), undefined, {
        numeric: true,
        sensitivity: "base",
      });
      return c !== 0 ? direction * c : a.dxOrder - b.dxOrder;
    });
    var frag = document.createDocumentFragment();
    rows.forEach(function (row) {
      frag.appendChild(row);
    });
    body.appendChild(frag);
  }

  function makeSortable(table) {
    if (!table.tHead || !table.tBodies.length) return;
    var heads = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(heads, function (th, col) {
      var button = document.createElement("button");
      button.type = "button";
      button.className = "dx-sort";
      button.textContent = th.textContent;
      button.title = "Sort by " + th.textContent.toLowerCase();
      th.textContent = "";
      th.appendChild(button);
      th.setAttribute("aria-sort", "none");
      button.addEventListener("click", function () {
        var direction = th.getAttribute("aria-sort") === "ascending" ? -1 : 1;
        Array.prototype.forEach.call(heads, function (other) {
          other.setAttribute("aria-sort", "none");
        });
        th.setAttribute("aria-sort", direction === 1 ? "ascending" : "descending");
        sortRows(table, col, direction);
      });
    });
    table.classList.add("dx-sortable--ready");
  }

  function start() {
    Array.prototype.forEach.call(document.querySelectorAll("table.dx-sortable"), makeSortable);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
