"""asr web dashboard: a FastAPI app streaming a live asr simulation to a plotly.js page.

See dashboard/PROTOCOL.md for the REST API, the WebSocket stream and the page contract.
"""


def create_app(settings=None):
    """Build the FastAPI app (see dashboard.app.create_app)."""
    from dashboard.app import create_app as _create_app

    return _create_app(settings)


__all__ = ["create_app"]
