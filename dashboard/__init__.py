"""asr web dashboard: a FastAPI app streaming a live asr simulation to a plotly.js page.

The source tree's dashboard/ folder, installed as the package asr_dashboard (setup.py; a
top-level name of asr's own): its modules import each other relatively, so they work under the
name they are imported by. See PROTOCOL.md (next to this file) for the REST API, the WebSocket
stream and the page contract.
"""


def create_app(settings=None):
    """Build the FastAPI app (see asr_dashboard.app.create_app)."""
    from .app import create_app as _create_app

    return _create_app(settings)


__all__ = ["create_app"]
