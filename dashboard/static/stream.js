/* The /ws/stream WebSocket (PROTOCOL.md "WebSocket"; see app.js for the module map): each
 * message to its panel, reconnection with backoff, the status watchdog.
 *
 * Extend frames are coalesced per animation frame: onmessage only keeps their text, so the
 * browser goes on taking the stream's data however busy the page is (a page that stops taking
 * it for client_stall_s is dropped by the server); the frames received since the last
 * animation frame are parsed and handed to the panels together, each panel drawing once (plots
 * at most every FLUSH_MS, the 3-D view on its own animation frame). Any other message first
 * delivers the frames before it, so the order holds. */
import { $, app, setStatus, showError, stats } from "./core.js";
import { applyState } from "./controls.js";
import { datasheetExtend } from "./datasheet.js";
import { handleIlc } from "./ilc.js";
import { handleInteraction } from "./interaction.js";
import { handleExtend, handleFigure, showBehind } from "./plots.js";
import { handleRl } from "./rl.js";
import { handleInteractionView, handleRobot3d } from "./robot3d.js";

// ------------------------------------------------------------------ WebSocket

const EXTEND_PREFIX = '{"type":"extend"';  // the server writes an extend message's type first
// frames kept for the next animation frame at most; beyond, delivered at once (a hidden tab
// runs no animation frames)
const MAX_PENDING = 120;
const pending = [];  // extend message texts received, not yet delivered
let drainQueued = false;
stats.disconnects = 0;  // stream connections lost (the server dropped it, or the network)
stats.coalesced = 0;    // the most frames delivered in one animation frame

export function connect() {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const url = `${proto}//${location.host}/ws/stream`;
  let ws;
  try { ws = new WebSocket(url); } catch (e) { scheduleReconnect(); return; }
  app.ws = ws;
  if (app.frames === 0) setStatus("connecting");
  ws.onopen = () => {
    app.connected = true;
    app.backoff = 500;
    setStatus("connected", "idle");
  };
  ws.onmessage = (ev) => {
    if (typeof ev.data === "string" && ev.data.startsWith(EXTEND_PREFIX)) {
      pending.push(ev.data);
      if (pending.length >= MAX_PENDING) drainFrames();
      else if (!drainQueued) { drainQueued = true; requestAnimationFrame(drainFrames); }
      return;
    }
    drainFrames();  // the frames received before this message first
    let msg;
    try { msg = JSON.parse(ev.data); } catch (e) { return; }
    try {
      switch (msg.type) {
        case "figure": handleFigure(msg.figure, msg.state); break;
        // the plots, the 3-D view's geom poses, the datasheet's operating point
        case "extend": deliver(msg, handleExtend, handleRobot3d, datasheetExtend); break;
        case "state": applyState(msg.state); break;
        case "ilc": handleIlc(msg); break;
        case "rl": handleRl(msg); break;
        // the interaction panel, and the 3-D view (the ur10 while a session runs)
        case "interaction": deliver(msg, handleInteraction, handleInteractionView); break;
        case "error": showError(msg.message || JSON.stringify(msg)); break;
        default: break;
      }
    } catch (e) {
      console.error("message", msg.type, e);
    }
  };
  ws.onclose = () => {
    if (app.ws !== ws) return;
    drainFrames();
    stats.disconnects += 1;
    app.connected = false;
    app.ws = null;
    scheduleReconnect();
  };
  ws.onerror = () => { /* onclose follows */ };
}

/* The extend frames received since the last animation frame, parsed and delivered in order. */
function drainFrames() {
  drainQueued = false;
  if (!pending.length) return;
  const texts = pending.splice(0);
  stats.coalesced = Math.max(stats.coalesced, texts.length);
  for (const text of texts) {
    let msg;
    try { msg = JSON.parse(text); } catch (e) { continue; }
    deliver(msg, handleExtend, handleRobot3d, datasheetExtend);
  }
}

/* A message several panels read reaches each in its own try: one panel's error does not keep
   it from the next. */
function deliver(msg, ...panels) {
  for (const panel of panels) {
    try { panel(msg); } catch (e) { console.error("message", msg.type, panel.name, e); }
  }
}

function scheduleReconnect() {
  const delay = app.backoff;
  app.backoff = Math.min(app.backoff * 2, 10000);
  setStatus(`reconnecting in ${(delay / 1000).toFixed(1)} s`, "reconnecting");
  setTimeout(connect, delay);
}

/* The status watchdog and fps. */
export function startWatchdog() {
  setInterval(() => {
    const now = performance.now();
    while (app.frameTimes.length && now - app.frameTimes[0] > 2000) app.frameTimes.shift();
    stats.fps = Math.round((app.frameTimes.length / 2) * 10) / 10;
    $("fps").textContent = app.connected ? `${stats.fps} fps` : "";
    showBehind();  // the plots' marker (plots.js), also when frames stop
    if (app.connected && now - app.lastFrameAt > 2000) {
      setStatus(app.state && app.state.paused ? "paused" : "waiting for frames", "idle");
    } else if (!app.connected && !app.ws && $("status").className.indexOf("reconnecting") < 0) {
      setStatus("disconnected");
    }
  }, 500);
}
