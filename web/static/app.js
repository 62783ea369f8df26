// Progressive enhancement only: every page works without this file. The lineage graph and the
// usage chart read their data from JSON embedded in the page; their boxes have fixed heights, so
// nothing moves when they draw.
(function () {
  "use strict";
  function data(id) {
    var el = document.getElementById(id);
    if (!el) return null;
    try { return JSON.parse(el.textContent); } catch (e) { return null; }
  }
  var g = data("lineage-data"), box = document.getElementById("lineage-graph");
  if (g && box && window.cytoscape && g.nodes && g.nodes.length) {
    if (window.cytoscapeDagre) cytoscape.use(window.cytoscapeDagre);
    var cy = cytoscape({
      container: box,
      elements: { nodes: g.nodes, edges: g.edges || [] },
      layout: { name: window.cytoscapeDagre ? "dagre" : "breadthfirst", rankDir: "LR", nodeSep: 30, rankSep: 150 },
      style: [
        { selector: "node", style: { "label": "data(label)", "font-size": 11, "text-valign": "bottom", "text-margin-y": 4,
          "background-color": "#0b5fad", "width": 18, "height": 18, "text-wrap": "ellipsis", "text-max-width": 120 } },
        { selector: "node[kind = 'job']", style: { "shape": "round-rectangle", "background-color": "#7a4fb8" } },
        { selector: "node[?root]", style: { "background-color": "#f5a623", "width": 26, "height": 26, "font-weight": "bold" } },
        { selector: "edge", style: { "width": 1.5, "line-color": "#9aa6b5", "target-arrow-color": "#9aa6b5",
          "target-arrow-shape": "triangle", "curve-style": "bezier" } },
        { selector: "edge[kind = 'migrated_to']", style: { "line-style": "dashed", "line-color": "#d0021b", "target-arrow-color": "#d0021b",
          "label": "migrated_to", "font-size": 9 } }
      ],
      wheelSensitivity: 0.2, minZoom: 0.2, maxZoom: 1.3
    });
    cy.on("tap", "node", function (e) { var h = e.target.data("href"); if (h) window.location.href = h; });
    window.tidemarkGraph = cy;
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
