"""The plots' data beyond the live stream (PROTOCOL.md "Plots"): GET /api/plots, the page's plot
specification (dashboard/plot_specs.py), the one table the server's figure and the page's plots
are both built from; GET /api/plots/range, a past window of the run (the record and its archive,
dashboard/frames.py) decimated as a first view, for the page's scrub back; GET /api/plots/pose, the
robot's pose at a past time of the run (the link angles and free base kept there, the 3-D view's
geom poses computed from them on the runner thread), which the 3-D view draws while the plots
are frozen (the RL runs' curves: GET /api/rl/runs, dashboard/routes/rl.py). Reads: they pass the
Host and token checks of every route (dashboard/security.py)."""

import asyncio

import numpy as np
from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import Response

from .. import figure as fig
from .. import frames
from ..plot_specs import spec
from ..routes.api import Runner, run_command

router = APIRouter(prefix="/api", tags=["simulation"])

MAX_RANGE_POINTS = 4000  # points per trace of a range answer, at most (and figure_max_values)
MAX_TIME_S = 1e9  # bound of t0 / t1, s


@router.get(
    "/plots",
    summary="the plots (div id, title, unit) and the series each shows (frame field, plot, "
    "name, line style), in trace order",
)
async def plots():
    return spec()


def _range_text(frames_, span, run_id, t0, t1, points, settings):
    """The range answer's JSON text: the frames decimated to at most `points` per trace."""
    history = None
    if frames_:
        n, _, j = frames_[0]["q"].shape
        per_trace = settings.figure_max_values // (n * j * len(fig.FRAME_FIELDS) + 1)
        points = max(2, min(points, per_trace - per_trace % 2))  # as a first view's bound
        history = fig.decimated_history(frames_, points)
    x, y = (
        ([], [])
        if history is None
        else (fig.rounded_times(history[0]), fig.rounded_rows(history[1]))
    )
    body = {"run_id": run_id, "span": span, "t0": t0, "t1": t1, "x": x, "y": y}
    return fig.dumps(body)


@router.get(
    "/plots/range",
    summary="the run's samples with t0 <= t <= t1 (s; default: the whole run kept) decimated "
    "min/max to at most `points` per trace, in the figure's trace order; `span` is the first "
    "and last time kept",
)
async def plot_range(
    request: Request,
    runner: Runner,
    t0: float | None = Query(None, ge=0, le=MAX_TIME_S, description="window start, s"),
    t1: float | None = Query(None, ge=0, le=MAX_TIME_S, description="window end, s"),
    points: int = Query(1000, ge=2, le=MAX_RANGE_POINTS, description="points per trace"),
):
    if t0 is not None and t1 is not None and t1 < t0:
        raise HTTPException(422, f"t1 = {t1:g} s is before t0 = {t0:g} s: t1 must be >= t0")
    with runner.lock:
        history = runner.session.history
        span = frames.run_span(history)
        run_id = runner.session.run_id
        lo = t0 if t0 is not None else (span[0] if span else 0.0)
        hi = t1 if t1 is not None else (span[1] if span else 0.0)
        parts = frames.run_frames(history, lo, hi)
    text = await asyncio.to_thread(
        _range_text, parts, span, run_id, lo, hi, points, request.app.state.settings
    )
    return Response(text, media_type="application/json")


def pose_at(runner, t):
    """The pose answer for time t (s), on the runner thread (it owns the Sim): the step kept
    nearest t (frames.sample_at), its link angles q (n, J) rad, the free base's pose there
    (n, 7 F: position m, quaternion w x y z; empty lists for a robot without a free base) and
    the 3-D view's geom poses (n, G, 12): position m, rotation row-major, of the n instances the
    view shows (SceneStream.n_shown), the whole robot at that step (the actuated joints and the
    free base; any other joint as it is now). An instance whose angles or base are not finite
    (diverged) gets zero poses, as its ghost does."""
    s = runner.session
    stream = s.robot3d
    sample = frames.sample_at(s.history, t)
    body = {"run_id": s.run_id, "scene_id": stream.scene_id, "t": t, "t_sample": None}
    if sample is None:
        return dict(body, q=[], base=[], robot3d={"poses": []})
    t_sample, q, base = sample
    n = min(stream.n_shown, q.shape[0])
    adr = s.sim.free_base_adr if base is not None else np.zeros(0, np.intp)
    poses = []
    for i in range(n):
        b = base[i] if adr.size else np.zeros(0)
        if np.all(np.isfinite(q[i])) and np.all(np.isfinite(b)):
            p = np.asarray(s.sim.geom_poses_at(q[i], i, base=b if adr.size else None), float)
        else:
            p = np.zeros_like(np.asarray(s.sim.geom_poses(i), float))
        poses.append(np.round(np.nan_to_num(p, nan=0.0, posinf=0.0, neginf=0.0), 5).tolist())
    qs = np.round(np.nan_to_num(q[:n]), 6).tolist()
    bs = [] if not adr.size else np.round(np.nan_to_num(base[:n]), 6).tolist()
    return dict(body, t_sample=round(t_sample, 6), q=qs, base=bs, robot3d={"poses": poses})


@router.get(
    "/plots/pose",
    summary="the robot's pose at time t (s) of the run: the kept step nearest t (record or "
    "archive), its link angles q (rad), its free base's pose (m, quaternion) and the 3-D "
    "view's geom poses (m, rotation row-major) of the instances shown",
)
async def plot_pose(
    runner: Runner,
    t: float = Query(..., ge=0, le=MAX_TIME_S, description="time of the run, s"),
):
    return await run_command(runner, lambda r: pose_at(r, t))
