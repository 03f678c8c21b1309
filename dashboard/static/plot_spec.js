/* The live plots' specification (see app.js for the module map): which plots there are (div id,
 * title, unit) and each series' plot and line style, served by GET /api/plots
 * (dashboard/plot_specs.py), and where each figure trace is drawn (app.route). plots.js fetches
 * and sets it and draws with it; timeline.js draws past windows into the same plots. Both read it
 * here, so neither imports the other's internals. */
import { app } from "./core.js";

/* {plots: [{plot, div, title, unit}], byKey, byDiv, byField, compare: {instance_colours,
   joint_dashes}, torqueModes}; null until fetched. A live binding: importers see the value
   setPlotSpec set. */
export let spec = null;

/* The served specification, indexed: plots by key and by div id, series by frame field. */
export function setPlotSpec(served) {
  const by = (arr, key) => Object.fromEntries(arr.map((x) => [x[key], x]));
  spec = { plots: served.plots, byKey: by(served.plots, "plot"), byDiv: by(served.plots, "div"),
           byField: by(served.series, "field"), compare: served.compare, torqueModes: served.torque_modes };
}

/* The live plots [{plot, div, title, unit}] (none before the specification) and where figure
   trace `gi` is drawn ({plot, local} or null). */
export const livePlots = () => (spec ? spec.plots : []);
export const routeOf = (gi) => app.route[gi] || null;
