"""GET /api/scene (robot3d): the current robot's geoms as meshes for the page's 3-D view
(dashboard/scene.py; PROTOCOL.md "Robot view"). A read: it passes the same Host and token checks
as every route (dashboard/security.py); the scene is built on the runner thread, once per Sim."""

from fastapi import APIRouter

from dashboard.routes.api import Runner, run_command

router = APIRouter(prefix="/api", tags=["simulation"])


@router.get(
    "/scene",
    summary="the robot's geoms as triangle meshes (geom frames, m), their "
    "names, the instances shown and scene_id (frames carry their poses)",
)
async def scene(runner: Runner):
    return await run_command(runner, lambda r: r.scene())
