"""Interaction-control routes under /api/interaction (PROTOCOL.md "Interaction control"): start /
stop a session on its own ur10 Sim (dashboard/interaction.py), change the law and gains, the
force and position references, read its status and options. The variant and the law are named
from lists, never free text; gains are checked by asr's own constructors (their ValueError is
the 422 text). The session is made in this router's lifespan (after the runner's) and stopped
when the server stops. POST routes pass the same access and size checks as every other route
(dashboard/security.py, dashboard/limits.py: middleware on the whole app)."""

import asyncio
import contextlib
from typing import Annotated, Literal

from fastapi import APIRouter, FastAPI, HTTPException, Request
from pydantic import Field

from .. import interaction as ic
from ..errors import public_message
from ..models import Strict


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI):
    runner = app.state.runner
    app.state.interaction = ic.InteractionSession(
        app.state.settings, lambda msg: runner.publish("interaction", msg)
    )
    try:
        yield
    finally:
        await asyncio.to_thread(app.state.interaction.shutdown)


router = APIRouter(
    prefix="/api/interaction",
    tags=["interaction control"],
    lifespan=lifespan,
    responses={
        409: {"description": "a session runs already / none runs / the controller is moving"},
        422: {"description": "invalid value"},
    },
)

Law = Literal[ic.LAWS]  # type: ignore[valid-type]
# finite numbers here; their ranges (dashboard/interaction.py RANGES and BOX) are checked by the
# session, whose 422 names the field, the axis, the value and the range
Vec3 = Annotated[
    list[Annotated[float, Field(allow_inf_nan=False)]],
    Field(min_length=3, max_length=3, description="one value per task axis"),
]


def _described(what, field):
    """OpenAPI text of a field: what it is and its valid range (RANGES)."""
    lo, hi, unit, _ = ic.RANGES[field]
    return f"{what}, {unit}, valid {lo:g} .. {hi:g} per axis"


class LawBody(Strict):
    law: Law = Field("direct_force", description="admittance or direct_force")
    mass: Vec3 | None = Field(None, description=_described("admittance M_d", "mass"))
    damping: Vec3 | None = Field(None, description=_described("admittance K_D", "damping"))
    stiffness: Vec3 | None = Field(None, description=_described("admittance K_P", "stiffness"))
    kp: Vec3 | None = Field(None, description=_described("direct force K_P", "kp"))
    ki: Vec3 | None = Field(None, description=_described("direct force K_I", "ki"))
    max_offset: float | None = Field(None, gt=0, le=1, description="offset bound, m")

    def gains(self):
        return self.model_dump(
            include={"mass", "damping", "stiffness", "kp", "ki", "max_offset"}, exclude_none=True
        )


class StartBody(LawBody):
    variant: str = Field(
        "rigid",
        max_length=64,
        description="variant of ur10, one of GET "
        "/api/interaction/options' variants (checked against that list)",
    )
    position: Vec3 = Field(
        list(ic.START_POSITION), description="start pose of the tool, m, inside the box"
    )


class ReferenceBody(Strict):
    force: Vec3 | None = Field(
        None, description=_described("force reference along the task axes (tool frame)", "force")
    )
    position: Vec3 | None = Field(None, description="m, base frame, inside the box")


def session(request: Request) -> ic.InteractionSession:
    return request.app.state.interaction


def _answer(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except (ic.Busy, ic.NotRunning) as exc:
        raise HTTPException(409, public_message(exc)) from None
    except (ValueError, TypeError) as exc:  # asr's gain checks, InteractionInputError
        raise HTTPException(422, public_message(exc)) from None


@router.get("/options", summary="variants, laws, default gains, the position box")
async def options():
    return ic.InteractionSession.options()


@router.get("/status", summary="the session: running, FSM state, f_e, f_d, x_m, x_d, law, gains")
async def status(request: Request):
    # in a worker thread: status() takes the session's lock, which its stepping thread holds
    # while it steps; the event loop (every request, the stream) must never wait for it
    return await asyncio.to_thread(session(request).status)


@router.post("/start", summary="build the Sim, move over the plate, hold (409 while one runs)")
async def start(body: StartBody, request: Request):
    return await asyncio.to_thread(
        _answer, session(request).start, body.variant, body.law, body.gains(), body.position
    )


@router.post("/stop", summary="stop the session (its thread ends)")
async def stop(request: Request):
    return await asyncio.to_thread(session(request).stop)


@router.post("/law", summary="change the law and gains (a new controller from the present pose)")
async def law(body: LawBody, request: Request):
    return await asyncio.to_thread(_answer, session(request).set_law, body.law, body.gains())


@router.post("/reference", summary="new force (N) and / or position (m) reference")
async def reference(body: ReferenceBody, request: Request):
    if body.force is None and body.position is None:
        raise HTTPException(422, "force, position: give at least one")
    return await asyncio.to_thread(
        _answer, session(request).set_reference, body.force, body.position
    )
