// Progressive enhancement only: every page works without this file. The usage chart reads its
// data from JSON embedded in the page; its box has a fixed height, so nothing moves when it
// draws. The lineage graph is lineage.js.
(function () {
  "use strict";
  function data(id) {
    var el = document.getElementById(id);
    if (!el) return null;
    try { return JSON.parse(el.textContent); } catch (e) { return null; }
  }
  var u = data("usage-data"), chart = document.getElementById("usage-chart");
  if (u && chart && window.uPlot && u.x && u.x.length) {
    var plot = new uPlot({
      width: chart.clientWidth || 600, height: 240,
      series: [{}, { label: "reads", stroke: "#0b5fad", width: 2 }, { label: "writes", stroke: "#7a4fb8", width: 2 }],
      axes: [{}, { label: "per day" }],
      scales: { x: { time: true, range: u.from && u.to ? function () { return [u.from, u.to]; } : undefined } }
    }, [u.x, u.reads, u.writes], chart);
    window.addEventListener("resize", function () { plot.setSize({ width: chart.clientWidth, height: 240 }); });
    window.tidemarkChart = plot;
  }
  var s = data("streak-data"), streak = document.getElementById("streak-chart");
  if (s && streak && window.uPlot && s.x && s.x.length) {
    var sp = new uPlot({
      width: streak.clientWidth || 600, height: 200,
      series: [{}, { label: "clean runs in a row", stroke: "#2e7d32", width: 2, points: { show: true, size: 7 }, paths: uPlot.paths && uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined }],
      axes: [{}, { label: "streak" }],
      // The x axis spans the runs (from/to, padded on the server), the y axis 0 to the longest
      // streak: the library's own ranges stretch one run over years.
      scales: {
        x: { time: true, range: s.from && s.to ? function () { return [s.from, s.to]; } : undefined },
        y: { range: function () { return [0, Math.max.apply(null, s.streak) + 1]; } }
      }
    }, [s.x, s.streak], streak);
    window.addEventListener("resize", function () { sp.setSize({ width: streak.clientWidth, height: 200 }); });
    window.tidemarkStreak = sp;
  }
})();
