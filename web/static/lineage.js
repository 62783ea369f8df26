// The lineage graph of the asset page, and of the version page (a version's provenance and
// blast radius). Progressive enhancement: the lists beside the graph say the same in words, and
// the direction switch and depth are plain links and forms.
//
// Wide fan-outs collapse: more than GROUP_MIN siblings of one kind, namespace and state, reached
// from one node, are drawn as one group node ("40 jobs in etl", "90 tables in mart · affected"),
// which a click expands in place. A node's state (a downstream table affected, recovered or
// unknown, a job to repeat) is drawn in colour and written under its name. A
// click on any other node selects it and shows its details with a link to its page, so
// exploring the graph never leaves the page by accident. The box's height follows the graph.
(function () {
  "use strict";
  var GROUP_MIN = 8; // more siblings than this stop being readable side by side (groupMin in web/lineagefit.go)
  var MAX_HEIGHT = 1000; // px: past this the graph zooms out, down to MIN_ZOOM, then pans
  var MIN_ZOOM = 0.8; // labels stay readable (11px at 1)
  var el = document.getElementById("lineage-data"), box = document.getElementById("lineage-graph"),
    panel = document.getElementById("lineage-details");
  if (!el || !box || !window.cytoscape) return;
  var g;
  try { g = JSON.parse(el.textContent); } catch (e) { return; }
  if (!g || !g.nodes || !g.nodes.length) return;
  if (window.cytoscapeDagre) cytoscape.use(window.cytoscapeDagre);
  var expanded = {}; // groups a person opened (here, or through the page's address)
  (g.expanded || []).forEach(function (k) { expanded[k] = true; });

  function plural(kind) { return kind === "job" ? "jobs" : kind ? kind + "s" : "assets"; }
  function text(d) { return d.label + (d.namespace ? "\n" + d.namespace : "") + (d.note ? "\n" + d.note : ""); }
  var STATE_WORDS = { affected: "affected", recovered: "recovered", unknown: "state unknown", repeat: "to repeat" };

  // layout assigns each node the node drawn for it: itself, or its group while the group is
  // collapsed. Nearest levels first, so the children of a collapsed node have the group as their
  // parent and collapse under it in turn.
  function layout() {
    var rep = {}, members = {}, levels = {};
    g.nodes.forEach(function (n) { (levels[n.data.depth] = levels[n.data.depth] || []).push(n.data); });
    Object.keys(levels).map(Number).sort(function (a, b) { return a - b; }).forEach(function (depth) {
      var key = {}, sib = {};
      levels[depth].forEach(function (d) {
        if (!d.from || !(d.from in rep)) return;
        var k = "group:" + rep[d.from] + "|" + d.side + "|" + d.kind + "|" + d.namespace + "|" + (d.state || "");
        key[d.id] = k;
        (sib[k] = sib[k] || []).push(d);
      });
      levels[depth].forEach(function (d) {
        var k = key[d.id];
        d.group = k && sib[k].length > GROUP_MIN ? k : "";
        if (d.group) members[k] = sib[k];
        rep[d.id] = d.group && !expanded[d.group] ? d.group : d.id;
      });
    });
    return { rep: rep, members: members };
  }

  function elements() {
    var l = layout(), els = [], added = {}, edges = {};
    g.nodes.forEach(function (n) {
      var d = n.data, r = l.rep[d.id];
      if (r === d.id) {
        els.push({ group: "nodes", data: Object.assign({}, d, { text: text(d) }) });
      } else if (!added[r]) {
        added[r] = true;
        var m = l.members[r];
        var label = m.length + " " + plural(d.kind) + " in " + (d.namespace || "no namespace") + (d.state ? " · " + STATE_WORDS[d.state] : "");
        els.push({ group: "nodes", data: { id: r, kind: "group", memberKind: d.kind, namespace: d.namespace, side: d.side,
          state: d.state || "", label: label, text: label + "\n(click to expand)", size: m.length } });
      }
    });
    (g.edges || []).forEach(function (e) {
      var d = e.data, s = l.rep[d.source], t = l.rep[d.target];
      if (!s || !t || s === t) return;
      var k = s + ">" + t + ">" + (d.kind || "flow") + ">" + (d.label || "");
      if (edges[k]) { edges[k].data.n++; return; }
      edges[k] = { group: "edges", data: { id: k, source: s, target: t, kind: d.kind || "flow", label: d.label || "", n: 1 } };
    });
    Object.keys(edges).forEach(function (k) { els.push(edges[k]); });
    return els;
  }

  var cy = cytoscape({
    container: box,
    style: [
      { selector: "node", style: { "label": "data(text)", "font-size": 11, "text-valign": "bottom", "text-margin-y": 4,
        "text-wrap": "wrap", "text-max-width": 170, "text-overflow-wrap": "anywhere", "color": "#1d2430",
        "background-color": "#0b5fad", "width": 18, "height": 18 } },
      { selector: "node[kind = 'job']", style: { "shape": "round-rectangle", "background-color": "#7a4fb8" } },
      { selector: "node[kind = 'group']", style: { "shape": "round-rectangle", "background-color": "#e3e7ee", "border-width": 2,
        "border-style": "dashed", "border-color": "#5c6675", "width": 34, "height": 26, "font-weight": "bold" } },
      { selector: "node[side = 'migration'], node[side = 'column']", style: { "border-width": 2, "border-color": "#5c6675" } },
      { selector: "node[state = 'affected']", style: { "background-color": "#c62828", "shape": "diamond", "width": 22, "height": 22 } },
      { selector: "node[state = 'recovered']", style: { "background-color": "#2e7d32" } },
      { selector: "node[state = 'unknown']", style: { "background-color": "#fff", "border-width": 2, "border-style": "dashed", "border-color": "#5c6675" } },
      { selector: "node[state = 'repeat']", style: { "background-color": "#7a4fb8", "border-width": 3, "border-color": "#c62828" } },
      { selector: "node[kind = 'group'][state = 'affected']", style: { "shape": "round-rectangle", "background-color": "#fde8e6", "border-color": "#c62828", "width": 34, "height": 26 } },
      { selector: "node[kind = 'group'][state = 'recovered']", style: { "background-color": "#e3f3e5", "border-color": "#2e7d32" } },
      { selector: "node[kind = 'group'][state = 'repeat']", style: { "background-color": "#efe7f8", "border-color": "#c62828" } },
      { selector: "node[?former]", style: { "color": "#8a5a00" } },
      { selector: "node[deleted]", style: { "border-width": 2, "border-style": "dotted", "border-color": "#a1271b" } },
      { selector: "node[?root]", style: { "background-color": "#f5a623", "width": 26, "height": 26, "font-weight": "bold" } },
      { selector: "node:selected", style: { "border-width": 4, "border-color": "#10273f" } },
      { selector: "edge", style: { "width": "mapData(n, 1, 40, 1.5, 6)", "line-color": "#9aa6b5", "target-arrow-color": "#9aa6b5",
        "target-arrow-shape": "triangle", "curve-style": "bezier" } },
      { selector: "edge[kind = 'migrated_to']", style: { "line-style": "dashed", "line-color": "#d0021b", "target-arrow-color": "#d0021b",
        "label": "migrated_to", "font-size": 9 } },
      { selector: "edge[kind = 'column']", style: { "line-style": "dotted", "width": 2.5, "line-color": "#2e7d32", "target-arrow-color": "#2e7d32",
        "label": "data(label)", "font-size": 9, "text-wrap": "wrap", "color": "#1b5e20", "text-background-color": "#fff",
        "text-background-opacity": 0.9, "text-background-padding": 2 } }
    ],
    wheelSensitivity: 0.2, minZoom: 0.2, maxZoom: 1.5
  });

  // fit sizes the box to the graph at a readable zoom (never above 1, never so small that labels
  // cannot be read), so a small graph takes little room and a large one is not squeezed into a
  // fixed panel. A graph taller than MAX_HEIGHT even so is panned, centred on what was just
  // expanded (or on this asset).
  function fit(focus) {
    var bb = cy.elements().boundingBox(), w = box.clientWidth || 800;
    var z = Math.max(MIN_ZOOM, Math.min(1, (w - 40) / Math.max(bb.w, 1), (MAX_HEIGHT - 40) / Math.max(bb.h, 1)));
    box.style.height = Math.round(Math.min(Math.max(bb.h * z + 40, 160), MAX_HEIGHT)) + "px";
    cy.resize();
    cy.zoom(z);
    if (bb.h * z + 40 > MAX_HEIGHT || bb.w * z + 40 > w) cy.center(focus && focus.length ? focus : cy.nodes("[?root]"));
    else cy.center();
  }

  function draw(focus) {
    cy.elements().remove();
    cy.add(elements());
    cy.layout({ name: window.cytoscapeDagre ? "dagre" : "breadthfirst", rankDir: "LR", nodeSep: 14, rankSep: 110,
      nodeDimensionsIncludeLabels: true, animate: false }).run();
    fit(focus ? cy.nodes().filter(function (n) { return n.data("group") === focus; }) : null);
  }

  function add(parent, tag, txt, cls) {
    var e = document.createElement(tag);
    if (txt) e.textContent = txt;
    if (cls) e.className = cls;
    parent.appendChild(e);
    return e;
  }

  // show puts a node's details in the panel under the graph: what it is, where it sits, a link
  // to its page, and the group it was expanded from (to fold it back).
  function show(d) {
    panel.textContent = "";
    panel.hidden = false;
    var h = add(panel, "p");
    add(h, "strong", d.label || "(no name)");
    add(h, "span", " ");
    add(h, "span", d.kind === "group" ? d.memberKind + " group" : d.kind, "kind");
    add(panel, "p", "Namespace: " + (d.namespace || "none"), "small");
    if (d.note) add(panel, "p", d.note, "small");
    if (d.detail) add(panel, "p", d.detail);
    var where = d.root ? "This asset." : d.side === "migration" ? "The other side of a dataset migration." :
      d.side === "column" ? "Reached by the chosen column's lineage." : d.side === "downstream" || d.side === "upstream" ?
        d.depth + (d.depth === 1 ? " hop " : " hops ") + d.side + "." : "";
    if (d.kind === "group") where = "Expanded: each of the " + d.size + " now has its own node.";
    if (where) add(panel, "p", where, "small");
    if (d.href && !d.root) {
      var a = add(panel, "a", "Open " + (d.label || "its page"), "button");
      a.href = d.href;
      a.id = "lineage-open";
    }
    if (d.group && expanded[d.group]) {
      var b = add(panel, "button", "Collapse it back into its group", "quiet");
      b.type = "button";
      b.id = "lineage-collapse";
      b.addEventListener("click", function () { delete expanded[d.group]; draw(); panel.hidden = true; });
    }
  }

  // groupLink is the address of the page with group id expanded, from the list of groups
  // beside the graph ("" when the page lists none).
  function groupLink(id) {
    var items = document.querySelectorAll("#lineage-groups li[data-group]");
    for (var i = 0; i < items.length; i++) {
      var a = items[i].querySelector("a.group-expand");
      if (items[i].getAttribute("data-group") === id && a) return a.href;
    }
    return "";
  }

  cy.on("tap", "node", function (e) {
    var d = e.target.data();
    if (d.kind === "group") {
      expanded[d.id] = true;
      // Past the page's cap (g.limit, the asset page's), the page expands it instead, and says
      // which nodes it then leaves out.
      var link = g.limit && elements().filter(function (x) { return x.group === "nodes"; }).length > g.limit && groupLink(d.id);
      if (link) { window.location.href = link; return; }
      draw(d.id);
      show(d);
      return;
    }
    show(d);
  });
  cy.on("tap", function (e) { if (e.target === cy) panel.hidden = true; });
  cy.on("mouseover", "node", function (e) { box.title = e.target.data("text").replace("\n", " · "); });
  cy.on("mouseout", "node", function () { box.title = ""; });
  draw();
  window.tidemarkGraph = cy;
})();
