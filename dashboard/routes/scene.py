"""GET /api/scene (robot3d): the current robot's geoms as meshes for the page's 3-D view
(dashboard/scene.py; PROTOCOL.md "Robot view"), with a label per instance shown (its compare
preset); GET /api/scene/interaction: the same for the interaction panel's ur10 Sim
(dashboard/interaction.py). Reads: they pass the same Host and token checks as every route
(dashboard/security.py); the main scene is built on the runner thread, once per Sim."""

import asyncio

from fastapi import APIRouter, HTTPException, Request

from ..errors import public_message
from ..interaction import NotRunning
from ..routes.api import Runner, run_command

router = APIRouter(prefix="/api", tags=["simulation"])


def labelled(runner):
    """The runner's scene with `labels`: each shown instance's compare preset, else the robot."""
    s = runner.scene()
    presets = list(runner.session.compare)[: s["n_instances"]]
    if len(presets) == s["n_instances"]:
        return dict(s, labels=[f"preset {x:g}" for x in presets])
    return dict(s, labels=[runner.session.robot.name])


@router.get(
    "/scene",
    summary="the robot's geoms as triangle meshes (geom frames, m), their "
    "names, the instances shown, their labels and scene_id (frames carry their poses)",
)
async def scene(runner: Runner):
    return await run_command(runner, labelled)


@router.get(
    "/scene/interaction",
    summary="the interaction session's ur10 geoms as triangle meshes (geom frames, m) and "
    "scene_id (its interaction messages carry their poses); 409 before any session",
)
async def interaction_scene(request: Request):
    try:
        return await asyncio.to_thread(request.app.state.interaction.scene)
    except NotRunning as exc:
        raise HTTPException(409, public_message(exc)) from None
