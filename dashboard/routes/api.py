"""REST API under /api (see PROTOCOL.md). Handlers never touch the Sim: they queue commands for
the runner thread and await their result; bad values answer 422, an unknown robot 404, and the
simulation keeps running either way. Reads are GET; whatever changes state or makes a file
(exports, datasheets) is POST, so that only the dashboard's own page can ask for it (the Origin
check of dashboard/security.py applies to POSTs, and any page can make a browser send a GET).
Error texts pass dashboard.errors.public_message (no server
paths, no long echoes)."""

import asyncio
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response

from .. import models
from ..errors import public_message
from ..ilc import Busy
from ..references import ControlError
from ..robots import NotFound, list_robots
from ..runner import SimRunner

router = APIRouter(
    prefix="/api",
    tags=["simulation"],
    responses={
        404: {"description": "unknown robot or variant"},
        422: {"description": "invalid value"},
    },
)


def get_runner(request: Request) -> SimRunner:
    return request.app.state.runner


Runner = Annotated[SimRunner, Depends(get_runner)]


async def run_command(runner: SimRunner, fn):
    """Apply fn(runner) on the runner thread; map its errors to HTTP answers."""
    try:
        return await asyncio.wrap_future(runner.submit(fn))
    except NotFound as exc:
        raise HTTPException(404, public_message(exc)) from None
    except Busy as exc:
        raise HTTPException(409, public_message(exc)) from None
    except (ControlError, ValueError, TypeError, ArithmeticError) as exc:
        raise HTTPException(422, public_message(exc)) from None


@router.get("/robots", summary="robots, their variants and joints; broken ones with their error")
async def robots(request: Request):
    cache = request.app.state.robots
    if cache is None:
        try:
            cache = await asyncio.to_thread(list_robots)
        except OSError as exc:  # the robots folder itself cannot be read (not kept: try again)
            return {"robots": [], "error": public_message(f"robots folder: {exc}")}
        request.app.state.robots = cache
    return {"robots": cache}


@router.get("/state", summary="current configuration")
async def state(runner: Runner):
    return await run_command(runner, lambda r: r.state())


def given_fields(body):
    """The request's fields that were given (None: not given), also inside per-joint params."""
    d = body.model_dump(exclude_none=True)
    if "params" in d:
        d["params"] = {
            j: {k: v for k, v in g.items() if v is not None} for j, g in d["params"].items()
        }
    return d


@router.post("/robot", summary="switch robot (404 for an unknown one)")
async def robot(body: models.RobotChoice, runner: Runner):
    return await run_command(runner, lambda r: r.switch_robot(body.robot, body.variant))


@router.post(
    "/control",
    summary="partial update of presets, modes, params, references, speed, "
    "pause; answers the new state",
)
async def control(body: models.Control, runner: Runner):
    c = given_fields(body)
    return await run_command(runner, lambda r: r.control(c))


@router.post(
    "/stiffness/{which}",
    summary="every joint (or the one named by ?joint=) to its model's soft / stiff preset",
)
async def stiffness(
    which: Literal["soft", "stiff"],
    runner: Runner,
    joint: Annotated[str | None, Query(min_length=1, max_length=100)] = None,
):
    return await run_command(runner, lambda r: r.set_stiffness(which, joint))


@router.post("/push", summary="impulse torque on a joint")
async def push(body: models.Push, runner: Runner):
    p = body.model_dump()
    return await run_command(runner, lambda r: r.do_push(p))


@router.post(
    "/reset",
    summary="restart from the robot's initial state (or its first view's, "
    "robot.toml initial.first_view)",
)
async def reset(runner: Runner):
    return await run_command(runner, lambda r: r.reset())


@router.post("/compare", summary="N instances side by side, one preset each ([] leaves)")
async def compare(body: models.Compare, runner: Runner):
    return await run_command(runner, lambda r: r.set_compare(body.presets))


@router.post("/ilc/start", summary="start the ILC (min-jerk 0 -> target on every joint)")
async def ilc_start(body: models.ILCStart, runner: Runner):
    cfg = body.model_dump()
    return await run_command(runner, lambda r: r.start_ilc(cfg))


@router.post("/ilc/stop", summary="stop the ILC after its current iteration")
async def ilc_stop(runner: Runner):
    return runner.stop_ilc()


@router.get("/ilc", summary="ILC status: running, iteration, errors per iteration")
async def ilc_status(runner: Runner):
    return runner.ilc_status()


@router.post("/ilc/result.npz", summary="the learned input of the last ILC run")
async def ilc_result(runner: Runner):
    data = await asyncio.to_thread(runner.ilc_result_npz)
    if data is None:
        raise HTTPException(404, "no ILC result yet; POST /api/ilc/start first")
    return Response(
        data,
        media_type="application/octet-stream",
        headers={"Content-Disposition": 'attachment; filename="asr_ilc.npz"'},
    )


@router.post(
    "/datasheet",
    summary="the actuator datasheet (asr.datasheet) of a joint's model at "
    "the joint's current parameters; 422 for an unknown joint or one without a spring",
)
async def datasheet(
    request: Request, runner: Runner, joint: Annotated[str, Query(min_length=1, max_length=100)]
):
    inputs = await run_command(runner, lambda r: r.datasheet_inputs(joint))
    try:
        body = await asyncio.to_thread(request.app.state.datasheets.get, inputs)
    except (ValueError, TypeError) as exc:
        raise HTTPException(422, public_message(exc)) from None
    return Response(body, media_type="application/json")


@router.get("/workspace", summary="the whole configuration (save)")
async def workspace_get(runner: Runner):
    return await run_command(runner, lambda r: r.workspace())


@router.post("/workspace", summary="load a saved configuration; answers the new state")
async def workspace_post(body: models.Workspace, runner: Runner):
    ws = given_fields(body)
    return await run_command(runner, lambda r: r.load_workspace(ws))


@router.post("/export.npz", summary="plotted history as NumPy arrays")
async def export_npz(runner: Runner):
    data = await asyncio.to_thread(runner.export_npz)
    return Response(
        data,
        media_type="application/octet-stream",
        headers={"Content-Disposition": 'attachment; filename="asr_history.npz"'},
    )


@router.post("/export.html", summary="plotted history as a standalone plotly HTML file")
async def export_html(runner: Runner):
    html = await asyncio.to_thread(runner.export_html)
    return Response(
        html,
        media_type="text/html",
        headers={"Content-Disposition": 'attachment; filename="asr_history.html"'},
    )


# the ROS version of the package exports (?ros=1|2): ROS 2 by default (ROS 1 Noetic reached its
# end of life in May 2025); a string Literal since a query value arrives as text
RosVersion = Annotated[
    Literal["1", "2"],
    Query(description="2: an ament_python ROS 2 package; 1: a catkin ROS 1 package"),
]


def ros_zip_response(data, robot, ros):
    """The download of a ROS package zip: named asr_<robot>_policy_ros<1|2>.zip, so that the
    two versions of one robot's package never overwrite each other in a downloads folder."""
    name = f"asr_{robot}_policy_ros{ros}.zip"
    return Response(
        data,
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@router.post(
    "/export.ros.zip",
    summary="the current presets and references as a ROS package (asr.ros.export): "
    "ROS 2 (ament_python, ?ros=2, the default) or ROS 1 (catkin, ?ros=1)",
)
async def export_ros(runner: Runner, ros: RosVersion = "2"):
    from asr.ros.export import export_zip

    ws = await run_command(runner, lambda r: r.workspace())
    try:
        data = await asyncio.to_thread(
            export_zip, ws, ws["robot"], variant=ws["variant"], ros=int(ros)
        )
    except (ValueError, TypeError) as exc:
        raise HTTPException(422, public_message(exc)) from None
    return ros_zip_response(data, ws["robot"], ros)
