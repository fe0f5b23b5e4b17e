// Draws each chart of a report page from its Vega-Lite spec, with the Vega libraries of assets/vega.js
// (bundled from the pinned vl-convert package when the site is built: nothing is fetched).
(function () {
  "use strict";
  document.querySelectorAll('script[type="application/json"][data-chart]').forEach(function (source) {
    var target = document.getElementById(source.getAttribute("data-chart"));
    if (!target || typeof vegaEmbed !== "function") { return; }
    vegaEmbed(target, JSON.parse(source.textContent), { actions: false, renderer: "svg" }).catch(function (error) {
      target.textContent = "This chart could not be drawn: " + error;
    });
  });
})();
