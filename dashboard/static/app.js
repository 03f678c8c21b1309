/* asr dashboard page: live plots over the /ws/stream WebSocket, controls over REST.
 *
 * ES modules (<script type="module">), one per panel, no build step: app.js (this entry),
 * core.js (the page state, REST, errors), controls.js (robot, joint, stiffness, gains,
 * reference, run, compare), plots.js (the figure and its frames), legend.js (the live plots'
 * HTML legends, built once per figure), timeline.js (the live plots'
 * shared time axis: pause the view, scrub back, one zoom, log y), ilc.js, rl.js (training, its
 * curve and runs, watch, exports), workspace.js (save, load, exports), stream.js (the
 * WebSocket), datasheet.js (the datasheet panel and its operating point), interaction.js (the
 * interaction control panel), robot3d.js (the 3-D robot view). plot_spec.js holds the plot
 * specification both plots.js and timeline.js read. robot3d.js loads the 3-D view's modules
 * with import() when it starts, so that the page works on without three.js: view3d_scene.js
 * (three.js renderer, camera, overlays) and view3d_model.js (one robot scene's meshes).
 * tests/dashboard/test_dashboard_modules.py checks that every script is in this graph and that
 * it has no import cycle.
 *
 * Trace / plot convention (also in dashboard/PROTOCOL.md, "WebSocket"):
 *
 *   The server sends ONE figure; the page splits its traces over five plots:
 *     "q"         #plot-q          link angle q and equilibrium reference eq, per instance and joint
 *     "defl"      #plot-defl       deflection q - eq
 *     "tau"       #plot-tau        link torque
 *     "stiffness" #plot-stiffness  joint stiffness
 *     "motors"    #plot-motors     motor angles th1, th2
 *   Trace k of figure.data goes to the plot named by trace.meta.plot (the element id
 *   "plot-q", "plot-defl", ...), and trace.meta.field (q, eq, defl, tau, stiffness, th1, th2)
 *   sets its line style. A trace without x takes figure.x (the server sends the decimated
 *   history's time axis once, PROTOCOL.md "First view").
 *   An extend message's indices are indices into figure.data ("trace order as in the figure");
 *   the page maps each to (plot, trace within plot) and calls Plotly.extendTraces once per plot,
 *   keeping per trace the points within state.window_s of its newest sample (at most
 *   maxPoints): by time, since the first view's history is sparser than the frames.
 *   Plotly.react is called once per figure message, with the figure's layout.uirevision on
 *   every plot so zoom/pan survive; never Plotly.newPlot per update.
 *   To stay light in the browser, each frame is decimated to SAMPLES_PER_FRAME samples per trace
 *   (maxPoints scaled by the same factor, so the plotted time window is the server's) and
 *   frames are buffered and drawn at most every FLUSH_MS (one extendTraces per plot per draw).
 *
 * window.asrStats = {fps, latencyMs, frames, ...}: fps = extend messages per second (2 s window);
 * latencyMs = time from the last control click to the first extend frame received after the
 * server acknowledged the change (REST answer or "state" message), i.e. the first frame the
 * runner computed with the change applied.
 */

import { api, hasPlotly, showError } from "./core.js";
import { applyState, bindControls, loadRobots } from "./controls.js";
import { bindIlc, loadIlc } from "./ilc.js";
import { startInteraction } from "./interaction.js";
import { bindRl, loadRlTasks } from "./rl.js";
import { startRobot3d } from "./robot3d.js";
import { connect, startWatchdog } from "./stream.js";
import { bindWorkspace } from "./workspace.js";

// ------------------------------------------------------------------ start

async function start() {
  if (!hasPlotly()) showError("plotly.js did not load from /static/plotly.min.js");
  startInteraction();
  startRobot3d();
  bindControls();
  bindIlc();
  bindRl();
  bindWorkspace();
  connect();
  startWatchdog();
  try { applyState(await api("GET", "/api/state")); } catch (e) { /* the figure message carries it too */ }
  loadRobots();
  loadRlTasks();
  loadIlc();
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => { start(); });
else start();
