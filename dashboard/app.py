"""The dashboard app: create_app(settings=None). The runner is created and started in the
lifespan and kept on app.state; the static page is mounted last so it cannot shadow the API.
Every request passes the access checks (dashboard/security.py) and the body limits
(dashboard/limits.py) first; 422 answers echo only a trimmed piece of the input."""

import contextlib
import os

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from .datasheet import DatasheetCache
from .errors import SafeJSONResponse, http_error_handler, validation_error_handler
from .limits import BodyLimit
from .routes import api, interaction, plots, rl, stream
from .routes import scene as scene_route  # robot3d
from .runner import SimRunner
from .security import AccessGuard, AccessPolicy
from .settings import Settings, get_settings

DOCS_ASSETS = "/docs-assets"  # where swagger-ui's files are served
DOCS_SCHEMA = "/docs/openapi.json"  # the API document /docs shows
SWAGGER_UI_OPENAPI = "3.0.3"  # the newest OpenAPI version the bundled swagger-ui reads
STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")


def _plotly_js_path():
    import plotly

    return os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js")


# three.js (Debian's libjs-three) for the 3-D view: a fixed list of files, never a path from
# the request; OrbitControls imports "../../../build/three.module.js", which these URLs keep
THREE_DIR = "/usr/share/javascript/three"
THREE_FILES = ("build/three.module.js", "examples/jsm/controls/OrbitControls.js")


def _serve_three(app):
    """GET /static/vendor/three/<one of THREE_FILES>: the installed file, or a 404 that names
    the package to install and none of the server's paths (the page then says so in its 3-D
    panel)."""

    def route(rel):
        async def three_js():
            path = os.path.join(THREE_DIR, rel)  # rel: one of THREE_FILES
            if os.path.isfile(path):
                return FileResponse(path, media_type="application/javascript")
            return PlainTextResponse(
                "three.js is not installed: apt-get install libjs-three", status_code=404
            )

        return three_js

    for rel in THREE_FILES:
        app.get(f"/static/vendor/three/{rel}", include_in_schema=False)(route(rel))


def _swagger_ui_dir():
    """The folder of swagger-ui's dist files (the swagger-ui-bundle package), or None without
    it (then FastAPI's own /docs, which loads them from a CDN)."""
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    path = swagger_ui_bundle.swagger_ui_path
    return path if os.path.isfile(os.path.join(path, "swagger-ui-bundle.js")) else None


def _serve_docs(app, assets):
    """/docs: FastAPI's Swagger UI page with its script, style and icon served from `assets`
    under /docs-assets, so the API reference renders without the internet."""
    from fastapi.openapi.docs import get_swagger_ui_html

    app.mount(DOCS_ASSETS, StaticFiles(directory=assets), name="docs-assets")

    @app.get(DOCS_SCHEMA, include_in_schema=False)
    async def docs_schema():
        # the bundle's swagger-ui (4.x) refuses a document labelled OpenAPI 3.1 (FastAPI's);
        # it renders this one under a 3.0 label. /openapi.json stays the true 3.1 document.
        return dict(app.openapi(), openapi=SWAGGER_UI_OPENAPI)

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui():
        return get_swagger_ui_html(
            openapi_url=DOCS_SCHEMA,
            title=f"{app.title} - API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url="/favicon.ico",
        )


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        runner = SimRunner(settings)
        runner.start()
        app.state.runner = runner
        try:
            yield
        finally:
            runner.stop()
            app.state.runner = None

    assets = _swagger_ui_dir()
    app = FastAPI(
        title="asr dashboard",
        lifespan=lifespan,
        # /docs from local files (below), so it works offline; no ReDoc (its script
        # would come from a CDN)
        docs_url=None if assets else "/docs",
        redoc_url=None,
        default_response_class=SafeJSONResponse,
        description="Live asr simulation (MuJoCo links, asr actuators); see dashboard/PROTOCOL.md.",
    )
    app.state.settings = settings
    app.state.robots = None  # robot list, read on first use
    app.state.datasheets = DatasheetCache()  # POST /api/datasheet answers
    app.dependency_overrides.setdefault(get_settings, lambda: settings)
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    # Starlette types a handler for any Exception; this one is registered for HTTPException only
    app.add_exception_handler(HTTPException, http_error_handler)  # type: ignore[arg-type]
    # added last = runs first: access checks before anything reads the body
    app.add_middleware(
        BodyLimit, max_bytes=settings.max_body_bytes, max_depth=settings.max_json_depth
    )
    app.add_middleware(AccessGuard, policy=AccessPolicy(settings))
    app.include_router(api.router)
    app.include_router(plots.router)  # GET /api/plots: the page's plot specification
    app.include_router(stream.router)
    app.include_router(rl.router)  # its lifespan: the training manager, after the runner
    app.include_router(interaction.router)  # its lifespan: the interaction session, likewise
    app.include_router(scene_route.router)  # robot3d: GET /api/scene

    @app.get("/static/plotly.min.js", include_in_schema=False)
    async def plotly_js():
        path = _plotly_js_path()
        if os.path.isfile(path):
            return FileResponse(path, media_type="application/javascript")
        from plotly.offline import get_plotlyjs

        return Response(get_plotlyjs(), media_type="application/javascript")

    _serve_three(app)  # robot3d: three.js for the 3-D view

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon():  # browsers ask for it on every load: a small SVG, not a 404
        return FileResponse(os.path.join(STATIC_DIR, "favicon.svg"), media_type="image/svg+xml")

    @app.get("/", include_in_schema=False)
    async def index():
        page = os.path.join(STATIC_DIR, "index.html")
        if not os.path.isfile(page):
            return PlainTextResponse("dashboard/static/index.html is missing", status_code=404)
        return FileResponse(page, media_type="text/html")

    if assets:
        _serve_docs(app, assets)

    os.makedirs(STATIC_DIR, exist_ok=True)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")  # last
    return app
