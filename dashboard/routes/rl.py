"""RL routes under /api/rl (PROTOCOL.md "RL"): start / pause / resume / stop a PPO training in its
own process (dashboard/rl.py), its status and learning curve, the session's runs with their
hyperparameters and curves (dashboard/rl_runs.py), watching its latest checkpoint on
the live robot, and its exports (POST: they are work a foreign page must not start; made one at a
time in a child process, dashboard/exports.py). Tasks are named from the registered asr env ids
(a list, never free text); the training folder is the server's own, never a client path. The manager
is made in this router's lifespan (after the runner's) and kills the training when the server
stops."""

import asyncio
import contextlib
from typing import Literal

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.responses import Response
from pydantic import Field

from .. import exports, policy_watch, rl, rl_runs, rl_tasks
from ..errors import public_message
from ..models import Strict
from ..routes.api import RosVersion, Runner, ros_zip_response, run_command


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI):
    runner = app.state.runner
    app.state.rl = rl.TrainingManager(
        app.state.settings, lambda msg: runner.publish("rl", msg), watch_info=runner.watch_info
    )
    app.state.rl_runs = rl_runs.RunsHistory()
    app.state.exports = exports.ExportGate(app.state.settings.export_timeout_s)
    try:
        yield
    finally:
        app.state.exports.close()
        await asyncio.to_thread(app.state.rl.shutdown)


router = APIRouter(
    prefix="/api/rl",
    tags=["reinforcement learning"],
    lifespan=lifespan,
    responses={
        409: {"description": "a training is already running"},
        422: {"description": "invalid value"},
    },
)

Task = Literal[rl_tasks.TASKS]  # type: ignore[valid-type]  # the registered asr env ids


class RLStart(Strict):
    task: Task = Field("asr/Reach2DOF-v0", description="registered asr env id")
    algo: Literal["PPO"] = "PPO"
    num_envs: int = Field(8, ge=1, le=1024, description="parallel sub-envs (one asr batch)")
    total_steps: int = Field(100_000, ge=1, le=10**10, description="env-steps over all sub-envs")
    seed: int = Field(0, ge=0, le=2**31 - 1)
    learning_rate: float = Field(1e-3, gt=0, le=1, description="Adam step size")
    n_steps: int = Field(32, ge=1, le=100_000, description="env-steps per sub-env per rollout")
    batch_size: int = Field(
        256, ge=2, le=1_000_000, description="PPO minibatch size (at most n_steps * num_envs)"
    )
    gamma: float = Field(0.95, ge=0, le=1, description="discount factor")


def manager(request: Request) -> rl.TrainingManager:
    return request.app.state.rl


def _answer(fn, *args):
    try:
        return fn(*args)
    except rl.TrainingBusy as exc:
        raise HTTPException(409, public_message(exc)) from None
    except rl.NoCheckpoint as exc:
        raise HTTPException(404, public_message(exc)) from None
    except (rl_tasks.RLInputError, rl.NothingToWatch) as exc:
        raise HTTPException(422, public_message(exc)) from None


@router.get("/tasks", summary="the tasks, algorithms and default hyperparameters")
async def tasks(request: Request):
    s = request.app.state.settings
    return {
        "tasks": list(rl_tasks.TASKS),
        "watchable": await asyncio.to_thread(rl_tasks.watchable_tasks),
        "algos": list(rl.ALGOS),
        "defaults": RLStart().model_dump(),  # type: ignore[call-arg]  # pydantic fills the defaults
        "limits": {"num_envs": [1, s.rl_num_envs_max], "total_steps": [1, s.rl_total_steps_max]},
    }


@router.get("/status", summary="the training: running, paused, pid, config, learning curve")
async def status(request: Request):
    return manager(request).status()


@router.get(
    "/runs",
    summary=f"the RL runs of this server session (at most {rl_runs.MAX_RUNS}, newest last): id, "
    "status, hyperparameters, metric and learning curve",
)
async def runs(request: Request):
    state = request.app.state
    return await asyncio.to_thread(state.rl_runs.answer, state.rl, state.settings.rl_curve_points)


@router.post("/start", summary="start a training in its own process (409 while one runs)")
async def start(body: RLStart, request: Request):
    cfg = body.model_dump()
    return await asyncio.to_thread(_answer, manager(request).start, cfg)


@router.post("/pause", summary="pause the training process (SIGSTOP)")
async def pause(request: Request):
    return manager(request).pause()


@router.post("/resume", summary="resume a paused training (SIGCONT)")
async def resume(request: Request):
    return manager(request).resume()


@router.post("/stop", summary="stop the training (SIGTERM, SIGKILL after rl_stop_s)")
async def stop(request: Request):
    return await asyncio.to_thread(manager(request).stop)


async def _watcher(request, m):
    """The PolicyWatcher of the latest run: its checkpoint exported as ONNX in a child (the
    export gate's; reused while the checkpoint is the same) and run with onnxruntime, so that
    torch never loads into the server."""
    folder, task, run, seed = await asyncio.to_thread(_answer, m.watch_target)
    data = await _policy_onnx(request, m, folder, task)
    return await asyncio.to_thread(_answer, policy_watch.PolicyWatcher, data, task, run, seed)


async def _policy_onnx(request, m, folder, task):
    """The ONNX bytes of the folder's current checkpoint: exported in a child (the export
    gate's) once per checkpoint, shared by watch and POST /api/rl/policy.onnx."""
    key = m.checkpoint_key(folder)
    data = m.cached_policy(key)
    if data is None:
        data = await _export(request, "onnx", folder, task)
        m.keep_policy(key, data)
    return data


@router.post(
    "/watch",
    summary="the latest checkpoint's policy drives the live robot (404 before a training, 422 "
    "when the latest run failed or has no finished PPO update)",
)
async def watch(request: Request, runner: Runner):
    m = manager(request)
    w = await _watcher(request, m)
    state = await run_command(runner, lambda r: r.start_watch(w))
    m.publish_status()
    return state


@router.post("/manual", summary="back to manual control (the policy stops)")
async def manual(request: Request, runner: Runner):
    m = manager(request)
    state = await run_command(runner, lambda r: r.stop_watch())
    m.publish_status()
    return state


async def _export(request, kind, *args):
    """The bytes of a policy export made in a child process (dashboard/exports.py)."""
    try:
        return await request.app.state.exports.run(kind, *args)
    except exports.ExportError as exc:
        raise HTTPException(exc.status, exc.detail) from None


@router.post(
    "/policy.onnx",
    summary="the latest checkpoint's policy as ONNX "
    "(asr.rl.export_onnx, in a child process; 429 when several wait already)",
)
async def policy_onnx(request: Request):
    m = manager(request)
    folder = _answer(m.checkpoint_dir)
    data = await _policy_onnx(request, m, folder, m.status()["config"]["task"])
    return Response(
        data,
        media_type="application/octet-stream",
        headers={"Content-Disposition": 'attachment; filename="policy.onnx"'},
    )


@router.post(
    "/policy.ros.zip",
    summary="the latest checkpoint as a ROS package (asr.ros.export, in a child process): "
    "ROS 2 (ament_python, ?ros=2, the default) or ROS 1 (catkin, ?ros=1)",
)
async def policy_ros(request: Request, ros: RosVersion = "2"):
    m = manager(request)
    folder = _answer(m.checkpoint_dir)
    task = m.status()["config"]["task"]
    cls = rl_tasks.task_class(task)
    onnx = await _policy_onnx(request, m, folder, task)  # the checkpoint's, exported once
    try:
        data = await request.app.state.exports.run(
            "ros-zip", cls.robot, cls.variant or "", ros, onnx=onnx
        )
    except exports.ExportError as exc:
        raise HTTPException(exc.status, exc.detail) from None
    return ros_zip_response(data, cls.robot, ros)
