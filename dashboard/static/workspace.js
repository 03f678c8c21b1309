/* The workspace & export panel (see app.js for the module map): save and load the workspace,
 * the history and ROS exports. */
import { $, act, api, app, download, on, postDownload, showError } from "./core.js";

export function bindWorkspace() {

  on("btn-save-workspace", "click", async () => {
    try {
      const ws = await api("GET", "/api/workspace");
      const blob = new Blob([JSON.stringify(ws, null, 2)], { type: "application/json" });
      const robot = (app.state && app.state.robot) || "asr";
      download(blob, `${robot}-workspace.json`);
    } catch (e) { showError(e.message); }
  });
  // exports: a workspace the ROS package cannot express (a time-varying reference: 422)
  // shows its reason instead of downloading an error
  on("btn-export-npz", "click", () => postDownload("/api/export.npz", "asr_history.npz"));
  on("btn-export-html", "click", () => postDownload("/api/export.html", "asr_history.html"));
  // the ROS version (2: ament_python, 1: catkin) is the select beside the button
  on("btn-export-ros", "click", () => postDownload(`/api/export.ros.zip?ros=${$("export-ros-version").value}`, "export to ROS"));
  on("workspace-file", "change", async (ev) => {
    const file = ev.target.files && ev.target.files[0];
    if (!file) return;
    let body;
    try { body = JSON.parse(await file.text()); } catch (e) { showError(`${file.name}: not JSON (${e.message})`); ev.target.value = ""; return; }
    await act("/api/workspace", body);
    ev.target.value = "";
  });
}
