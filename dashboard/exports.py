"""The dashboard's exports: the plotted history (POST /api/export.npz, /api/export.html:
history_npz, history_html) and the policy exports (POST /api/rl/policy.onnx,
/api/rl/policy.ros.zip?ros=1|2), these in a child process, one at a time, each bounded in time
(PROTOCOL.md "RL").

Why a child: torch's ONNX exporter is not thread-safe (two exports at once fail, and leave it
failing for the next ones), it imports torch into the server for good, and it can take long.
The child, `python -m asr_dashboard.exports KIND OUT (FOLDER [TASK] | ONNX ROBOT VARIANT ROS)`
(the package under the name it was imported by: asr_dashboard once installed; "onnx" exports a
training folder's checkpoint, "ros-zip" packages an ONNX file the server wrote), writes OUT
or prints one JSON line {"status", "detail"} (the HTTP answer: 422 bad checkpoint, 501 export
not available) and exits 1. RL "watch" runs its policy from such an ONNX export with
onnxruntime (dashboard/rl.py), so torch and Stable-Baselines3 never enter the server process.
The parent (ExportGate.run) lets one child run at a time; requests arriving meanwhile wait their
turn (at most MAX_WAITING; beyond, 429), and a child running longer than
Settings.export_timeout_s is killed (504), and so is one running when the server stops.
"""

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import tempfile

import numpy as np

from asr.common.optional import missing_extra

from . import figure as fig
from .errors import public_message

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_WAITING = 4  # export requests queued behind the running one
MAX_ERROR_BYTES = 4096


def history_npz(frames, meta, n_instances):
    """.npz bytes of the history `frames`, the record of every simulation step
    (dashboard/frames.py: t (T,) s, evenly spaced at dt, and every figure.FRAME_FIELDS (N, T, J)),
    the joints' names and `meta` (robot, variant, joints, presets, compare, dt) as JSON."""
    arrays = fig.history_arrays(frames) or {
        "t": np.zeros(0),
        **{f: np.zeros((n_instances, 0, len(meta["joints"]))) for f in fig.FRAME_FIELDS},
    }
    buf = io.BytesIO()
    np.savez_compressed(
        buf, **arrays, joints=np.array(meta["joints"]), metadata=np.array(json.dumps(meta))
    )
    return buf.getvalue()


def history_html(snap, motors, settings):
    """A standalone plotly HTML file of a figure.Snapshot's history, decimated as a first view
    (at most figure_points points per trace; the .npz export holds every sample), one subplot
    per quantity with its unit, plotly.js (minified) inline once: it opens offline. motors:
    {joint: motor count}."""
    import plotly.io as pio

    points = fig.points_per_trace(len(snap.skeleton.data), settings)
    f = fig.export_figure(snap.skeleton, fig.decimated_history(snap.frames, points), motors)
    return pio.to_html(
        f, include_plotlyjs=True, full_html=True, validate=False, config={"displaylogo": False}
    )


class ExportError(Exception):
    """An export that failed: `status` (HTTP) and `detail` (public text)."""

    def __init__(self, status, detail):
        super().__init__(detail)
        self.status, self.detail = status, detail


class ExportGate:
    """Runs export children one at a time (see the module doc)."""

    def __init__(self, timeout_s):
        self.timeout_s = timeout_s
        self._lock = asyncio.Lock()
        self._waiting = 0
        self._procs = set()  # the running child (a set: _run_child adds and removes it)

    def close(self):
        """The server stops: kill a running export child (its process group)."""
        for proc in list(self._procs):
            _kill(proc)

    async def run(self, kind, *args, onnx=None):
        """The bytes of export `kind` (main's KINDS) of `args`; ExportError otherwise. onnx:
        ONNX bytes the child reads from a file of its own (its path the first argument)."""
        if self._waiting >= MAX_WAITING:
            raise ExportError(
                429, f"{self._waiting} exports are waiting already; try again when they are done"
            )
        self._waiting += 1
        try:
            await self._lock.acquire()
        finally:
            self._waiting -= 1
        # the lock is held until the child is done, even when the request is given up
        # (the client left): the next export never runs beside it
        job = asyncio.ensure_future(
            asyncio.to_thread(_run_child, kind, args, self.timeout_s, self._procs, onnx)
        )
        job.add_done_callback(lambda _: self._lock.release())
        return await asyncio.shield(job)


def export_bytes(kind, args, timeout_s):
    """The bytes of export `kind` of `args` made in a child now, outside any ExportGate (a
    PolicyWatcher made outside the server); ExportError otherwise."""
    return _run_child(kind, tuple(args), timeout_s, set())


def _kill(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _run_child(kind, args, timeout_s, running, onnx=None):
    with tempfile.TemporaryDirectory(prefix="asr-export-") as tmp:
        out = os.path.join(tmp, "export.bin")
        if onnx is not None:  # the server's own bytes, in a file named here
            policy = os.path.join(tmp, "policy.onnx")
            with open(policy, "wb") as f:
                f.write(onnx)
            args = (policy, *args)
        env = dict(
            os.environ,
            OMP_NUM_THREADS="1",
            PYTHONPATH=os.pathsep.join(p for p in (REPO_ROOT, os.environ.get("PYTHONPATH")) if p),
        )
        proc = subprocess.Popen(
            [sys.executable, "-m", f"{__package__}.exports", kind, out, *args],
            cwd=tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # its own group: killed whole
        running.add(proc)
        try:
            text, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.communicate()
            raise ExportError(
                504,
                f"the export took longer than {timeout_s:g} s (server "
                "setting export_timeout_s) and was stopped",
            ) from None
        finally:
            running.discard(proc)
        if proc.returncode == 0 and os.path.isfile(out):
            with open(out, "rb") as f:
                return f.read()
        raise _child_error(proc.returncode, text[-MAX_ERROR_BYTES:])


def _child_error(code, output):
    lines = output.decode("utf-8", "replace").strip().splitlines()
    for line in reversed(lines):
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, dict) and "status" in answer:
            return ExportError(int(answer["status"]), public_message(answer["detail"]))
    tail = lines[-1] if lines else ""
    return ExportError(500, public_message(f"the export failed (exit {code}): {tail}", 300))


# ---------------------------------------------------------------- the child


def _onnx(out, folder, task=None):
    """The checkpoint's policy as ONNX; task: its asr env id (default: the folder's config).
    Without the extra [rl] (torch, onnx: imported by the export itself) 501 naming it."""
    try:
        from asr.rl import export_onnx
    except (ImportError, AttributeError) as exc:
        raise ExportError(501, f"ONNX export is not available on this server: {exc}") from None
    try:
        export_onnx(folder, out, task=task or None)
    except ImportError as exc:
        missing = missing_extra("asr.rl.export_onnx", "rl", exc.name or str(exc))
        raise ExportError(501, f"ONNX export is not available on this server: {missing}") from None
    except (ValueError, TypeError, OSError) as exc:
        raise ExportError(422, str(exc)) from None


def _ros_zip(out, onnx, robot, variant, ros):
    """The ROS `ros` ("1": catkin, "2": ament_python) package running the ONNX policy file
    `onnx` (the checkpoint's, which the server exported once and keeps: this child imports
    neither torch nor the training's backend). The task's keyword arguments come with the file
    (its metadata's env_kwargs, from the training folder's config.json): a Periodic2DOF node
    tracks the frequency and amplitude the policy was trained at."""
    from asr.ros.export import export_zip

    if ros not in ("1", "2"):  # the route checked it already; this guards a direct call
        raise ExportError(422, f"ros: got {ros!r}, valid: 1 or 2")
    try:
        data = export_zip(onnx, robot, variant=variant or None, ros=int(ros))
    except TypeError as exc:
        raise ExportError(
            501,
            f"the ROS {ros} package export (asr.ros.export) on this server cannot export "
            f"this ONNX policy: {exc}; download policy.onnx instead",
        ) from None
    except (ValueError, OSError) as exc:
        raise ExportError(422, str(exc)) from None
    with open(out, "wb") as f:
        f.write(data)


KINDS = {"onnx": _onnx, "ros-zip": _ros_zip}


def main(argv):
    kind, out, *args = argv
    try:
        KINDS[kind](out, *args)
    except ExportError as exc:
        print(json.dumps({"status": exc.status, "detail": exc.detail}))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
