"""GET /api/plots: the page's plot specification (dashboard/plot_specs.py; PROTOCOL.md "Plots"),
the one table the server's figure and the page's plots are both built from. A read of constant
data: it passes the Host and token checks of every route (dashboard/security.py)."""

from fastapi import APIRouter

from dashboard.plot_specs import spec

router = APIRouter(prefix="/api", tags=["simulation"])


@router.get(
    "/plots",
    summary="the plots (div id, title, unit) and the series each shows (frame field, plot, "
    "name, line style), in trace order",
)
async def plots():
    return spec()
