/* The live plots' legends (see app.js for the module map; PROTOCOL.md "Page"): HTML, one
 * `.plot-legend` box inside each plot's div at its right edge (the plot's right margin leaves
 * it room: never over a trace), built once per figure by plots.js, not by Plotly on every
 * redraw. Plotly's own legend (showlegend) is off: plotly.js redraws it with every
 * extendTraces, which cost a compare of 8 most of each redraw (issue 46: #plot-q 135 ms a
 * redraw with its legend, 50 ms without).
 *
 * One entry (`.entry`, data-trace = the trace's index in the plot) per trace: a line swatch in
 * its colour, dash and opacity, then its name. In compare mode the entries stand under their
 * instance's group title (`.group-title`, the trace's legendgrouptitle "preset 0.2"; data-group
 * its legendgroup), and a first row names each joint by its dash (`.joint`, data-joint). A click
 * hides or shows (Plotly.restyle `visible`: true or "legendonly", as Plotly's legend does) an
 * entry's trace, a group title's every trace (the instance), a joint's traces of every instance;
 * what is hidden is drawn faded and struck through (class "off"). Taller than the plot, the box
 * scrolls. */
import { hasPlotly } from "./core.js";

const LEGEND_CLASS = "plot-legend";
const SWATCH_PX = 26;  // a swatch's length
const GAP_PX = 6;      // between the plot area's right edge and the legend
const HIDDEN_PX = 120; // the legend's width assumed while its plot is hidden (not laid out)

/* The dash pattern Plotly draws for `dash` at line width `w` px (plotly.js Drawing.dashStyle:
   multiples of max(w, 3)), as SVG stroke-dasharray. */
function dashArray(dash, w) {
  const d = Math.max(w, 3);
  const pattern = { dot: [1, 1], dash: [3, 3], longdash: [5, 5], dashdot: [3, 1, 1, 1],
                    longdashdot: [5, 2, 1, 2] }[dash];
  if (pattern) return pattern.map((k) => k * d).join(",");
  return typeof dash === "string" && /^[\d.,\spx%]+$/.test(dash) && dash.trim() !== "" ? dash : "";
}

/* A line swatch (an inline SVG) in `line`'s colour and dash at `opacity`; a band trace (fill)
   a filled box. */
function swatch(tr) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("width", String(SWATCH_PX));
  svg.setAttribute("height", "8");
  const line = tr.line || {};
  let mark;
  if (tr.fill && tr.fill !== "none") {
    mark = document.createElementNS(ns, "rect");
    Object.entries({ x: 0, y: 0, width: SWATCH_PX, height: 8, fill: tr.fillcolor || line.color || "#999" })
      .forEach(([k, v]) => mark.setAttribute(k, String(v)));
  } else {
    mark = document.createElementNS(ns, "line");
    const w = Number.isFinite(line.width) ? line.width : 2;
    Object.entries({ x1: 0, y1: 4, x2: SWATCH_PX, y2: 4, stroke: line.color || "#444", "stroke-width": w })
      .forEach(([k, v]) => mark.setAttribute(k, String(v)));
    const da = dashArray(line.dash, w);
    if (da) mark.setAttribute("stroke-dasharray", da);
  }
  if (tr.opacity != null && tr.opacity !== 1) mark.setAttribute("opacity", String(tr.opacity));
  svg.appendChild(mark);
  return svg;
}

function row(className, text, tr) {
  const d = document.createElement("div");
  d.className = className;
  if (tr) d.appendChild(swatch(tr));
  const s = document.createElement("span");
  s.textContent = text;
  d.appendChild(s);
  return d;
}

const hidden = (tr) => tr.visible === "legendonly" || tr.visible === false;

/* Build plot div `gd`'s legend for `traces` (the trace objects about to be drawn, in the plot's
   order; `joints` [{name, dash}] in compare mode, else null) and return its width in px plus the
   gap: the right margin its plot needs. The old legend's entries go. */
export function buildLegend(gd, traces, joints) {
  let box = gd.querySelector(`:scope > .${LEGEND_CLASS}`);
  if (!box) {
    box = document.createElement("div");
    box.className = LEGEND_CLASS;
    box.addEventListener("click", (ev) => onClick(gd, ev));
    gd.appendChild(box);
  }
  box.textContent = "";
  const compare = Array.isArray(joints);
  box.dataset.compare = compare ? "1" : "0";
  if (compare && joints.length > 1) {
    const head = document.createElement("div");
    head.className = "joints";
    for (const j of joints) {
      const el = row("joint", j.name, { line: { color: "#555", dash: j.dash, width: 2 } });
      el.dataset.joint = j.name;
      el.title = `hide or show ${j.name} of every instance`;
      head.appendChild(el);
    }
    box.appendChild(head);
  }
  let group = null;
  traces.forEach((tr, k) => {
    const g = compare ? tr.legendgroup || "" : "";
    if (g && g !== group) {
      const title = row("group-title", (tr.legendgrouptitle && tr.legendgrouptitle.text) || g, null);
      title.dataset.group = g;
      title.title = "hide or show this instance";
      box.appendChild(title);
    }
    group = g;
    const el = row("entry", String(tr.name || ""), tr);
    el.dataset.trace = String(k);
    if (tr.meta && tr.meta.joint != null) el.dataset.joint = String(tr.meta.joint);
    if (g) el.dataset.group = g;
    if (hidden(tr)) el.classList.add("off");
    box.appendChild(el);
  });
  return legendMargin(gd);
}

/* The right margin, px, plot div `gd` needs for its legend: the legend's width plus a gap
   (HIDDEN_PX while the plot is hidden, not laid out; plots.js measures again when it shows it). */
export function legendMargin(gd) {
  const box = gd.querySelector(`:scope > .${LEGEND_CLASS}`);
  const width = box ? box.getBoundingClientRect().width : 0;
  return Math.ceil(width > 0 ? width : HIDDEN_PX) + GAP_PX;
}

/* The traces of `gd` a click on legend row `el` toggles. */
function targets(gd, el) {
  const data = gd.data || [];
  const pick = (f) => data.map((tr, k) => (f(tr) ? k : -1)).filter((k) => k >= 0);
  if (el.classList.contains("entry")) return [Number(el.dataset.trace)];
  if (el.classList.contains("group-title")) return pick((tr) => tr.legendgroup === el.dataset.group);
  if (el.classList.contains("joint")) {
    return pick((tr) => tr.meta && tr.meta.joint === el.dataset.joint && tr.meta.field !== "clamped");
  }
  return [];
}

function onClick(gd, ev) {
  const el = ev.target.closest(".entry, .group-title, .joint");
  if (!el || !hasPlotly() || !gd.data) return;
  const ks = targets(gd, el).filter((k) => gd.data[k]);
  if (!ks.length) return;
  // all hidden: show them all; else hide them all (Plotly's legend toggles a group so)
  const show = ks.every((k) => hidden(gd.data[k]));
  Plotly.restyle(gd, { visible: show ? true : "legendonly" }, ks);
  syncLegend(gd);
}

/* Entries, group titles and joints marked "off" as their traces are hidden. */
export function syncLegend(gd) {
  const box = gd.querySelector(`:scope > .${LEGEND_CLASS}`);
  if (!box || !gd.data) return;
  for (const el of box.querySelectorAll(".entry, .group-title, .joint")) {
    const ks = targets(gd, el).filter((k) => gd.data[k]);
    el.classList.toggle("off", ks.length > 0 && ks.every((k) => hidden(gd.data[k])));
  }
}
