"""Dashboard settings: a pydantic model, read once from ASR_DASHBOARD_* environment variables by
get_settings() (cached) and overridable in tests (create_app(settings) or
app.dependency_overrides[get_settings]). settings_from_env puts what the command line gave on
top of the environment; a value out of range is a SettingsError naming where it came from (the
variable or the option), the value (never the token's) and the valid range."""

import functools
import os

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .errors import short
from .security import normalize_origin

ENV_PREFIX = "ASR_DASHBOARD_"
# settings whose value is never shown, not even in an error
SECRET_FIELDS = frozenset({"token"})


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    robot: str = Field("qbmove_arm_2dof", description="robot simulated at start")
    variant: str | None = Field(None, description="its variant (None: the robot's own default)")
    update_hz: float = Field(30.0, gt=0, le=240, description="frames per second sent to clients")
    window_s: float = Field(10.0, gt=0, le=600, description="plotted history, s")
    n_compare_max: int = Field(8, ge=1, le=64, description="most instances in compare mode")
    max_samples: int = Field(50, ge=1, le=1000, description="most samples per frame")
    # a new client's first view (dashboard/figure.py, PROTOCOL.md "First view")
    figure_points: int = Field(
        1000,
        ge=10,
        le=100_000,
        description="most history points per trace in a client's first figure (min/max decimated)",
    )
    figure_max_values: int = Field(
        300_000,
        ge=1000,
        le=50_000_000,
        description="most history "
        "numbers in a client's first figure, all traces and the "
        "shared time axis together (fewer points per trace when "
        "there are many traces)",
    )
    threads: int = Field(1, ge=1, le=64, description="asr threads of the simulation")
    port: int = Field(8000, ge=1, le=65535, description="TCP port the server listens on")
    # who may drive the simulation (dashboard/security.py)
    host: str = Field(
        "127.0.0.1",
        min_length=1,
        description="address the server listens on; "
        "its name is a valid Host header besides the loopback names",
    )
    allow_origins: tuple[str, ...] = Field(
        (),
        description="extra page origins allowed to use "
        "the WebSocket and the state-changing routes, e.g. "
        "'http://mybox.lan:8000'",
    )
    token: str | None = Field(
        None,
        min_length=16,
        description="if set, required on every "
        "request and the WebSocket (?token=, cookie or Authorization)",
    )
    # limits (dashboard/limits.py, dashboard/server.py)
    max_body_bytes: int = Field(
        1 << 20, ge=1024, le=1 << 30, description="largest HTTP request body, bytes"
    )
    max_message_bytes: int = Field(
        64 << 10, ge=1024, le=1 << 30, description="largest WebSocket message from a client, bytes"
    )
    max_json_depth: int = Field(32, ge=4, le=1000, description="deepest JSON nesting accepted")
    client_queue: int = Field(
        16,
        ge=4,
        le=1024,
        description="most messages buffered per WebSocket client (older frames are dropped)",
    )
    client_stall_s: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="a WebSocket client whose "
        "connection takes no data for this long is disconnected, s",
    )
    # hostile clients (dashboard/server.py, dashboard/limits.py)
    header_timeout_s: float = Field(
        10.0,
        gt=0,
        le=3600,
        description="an HTTP connection that "
        "has not sent a whole request head this long after its "
        "first byte (or after connecting) is closed, s",
    )
    body_timeout_s: float = Field(
        30.0,
        gt=0,
        le=3600,
        description="a request body not received whole this long after its head is cut off, s",
    )
    max_connections: int = Field(
        256,
        ge=2,
        le=65536,
        description="most open connections (HTTP and WebSocket); more are closed at once",
    )
    ws_messages_per_s: float = Field(
        20.0,
        gt=0,
        le=10_000,
        description="WebSocket messages a "
        "client may send per second, on average (more are dropped)",
    )
    ws_message_burst: int = Field(
        40,
        ge=1,
        le=100_000,
        description="WebSocket messages a client may send at once before ws_messages_per_s applies",
    )
    export_timeout_s: float = Field(
        120.0,
        gt=0,
        le=3600,
        description="a policy export (its own process) not done this long is killed, s",
    )
    # RL trainings (dashboard/rl.py)
    rl_num_envs_max: int = Field(
        64, ge=1, le=1024, description="most parallel envs of a training started from the dashboard"
    )
    rl_total_steps_max: int = Field(
        10_000_000,
        ge=1,
        le=10**10,
        description="most env steps of a training started from the dashboard",
    )
    rl_curve_points: int = Field(
        1000, ge=10, le=100_000, description="most learning-curve rows sent to clients (decimated)"
    )
    rl_stop_s: float = Field(
        5.0,
        gt=0,
        le=300,
        description="a training not gone this long after SIGTERM is killed (SIGKILL), s",
    )

    @field_validator("allow_origins")
    @classmethod
    def _origins(cls, value):
        return tuple(normalize_origin(o) for o in value)


class SettingsError(ValueError):
    """A dashboard setting that is not valid, named as the user gave it."""


def env_name(field):
    """The environment variable of Settings field `field` (ASR_DASHBOARD_<FIELD>)."""
    return ENV_PREFIX + field.upper()


def valid_range(field):
    """The valid values of Settings field `field` in words ("valid range (0, 240]"), from its
    Field constraints; "" for a field without any."""
    bounds = {}
    for m in Settings.model_fields[field].metadata:
        for key in ("gt", "ge", "lt", "le", "min_length"):
            if getattr(m, key, None) is not None:
                bounds[key] = getattr(m, key)
    if "min_length" in bounds:
        n = bounds["min_length"]
        return "non-empty" if n == 1 else f"at least {n} characters"
    if not bounds:
        return ""
    lo = f"({bounds['gt']:g}" if "gt" in bounds else f"[{bounds.get('ge', '-inf'):g}"
    hi = f"{bounds['lt']:g})" if "lt" in bounds else f"{bounds.get('le', float('inf')):g}]"
    return f"valid range {lo}, {hi}"


# pydantic's error types of a value outside a Field's bounds
_RANGE_ERRORS = frozenset(
    {"greater_than", "greater_than_equal", "less_than", "less_than_equal", "string_too_short"}
)


def _reason(msg):
    """pydantic's message as a clause: "not a number, ..." rather than "Value error, Not ..."."""
    text = str(msg).removeprefix("Value error, ")
    return text[:1].lower() + text[1:]


def _shown(field, value):
    if field in SECRET_FIELDS and isinstance(value, str):
        return f"a value of {len(value)} characters"
    return short(value)


def _error(exc, values, options):
    """A SettingsError with one line per invalid field of the ValidationError `exc`."""
    lines = []
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else ""
        where = options.get(field) or (env_name(field) if field in Settings.model_fields else field)
        valid = valid_range(field) if field in Settings.model_fields else ""
        # out of range: the range says it all; else (not a number, not an origin) the reason
        reason = "" if err["type"] in _RANGE_ERRORS else _reason(err["msg"])
        lines.append(
            f"{where}: got {_shown(field, values.get(field))}"
            + "".join(f"; {text}" for text in (reason, valid) if text)
        )
    return SettingsError("\n".join(lines))


def settings_from_env(overrides=None, options=None) -> Settings:
    """Settings from the environment (ASR_DASHBOARD_ROBOT, ..._UPDATE_HZ, ...: every field,
    ASR_DASHBOARD_ALLOW_ORIGINS comma-separated) with `overrides` {field: value} on top (what
    the command line gave; a field absent from it keeps the environment's value, else the
    default). options {field: the option's name}: how an error names an overridden value
    ("--update-hz"); one from the environment is named by its variable. SettingsError (a
    ValueError) for a value out of range."""
    values = {}
    options = {f: o for f, o in (options or {}).items() if f in (overrides or {})}
    for name in Settings.model_fields:
        raw = os.environ.get(env_name(name))
        if raw is not None:
            values[name] = (
                [o for o in raw.split(",") if o.strip()] if name == "allow_origins" else raw
            )
    values.update(overrides or {})
    try:
        return Settings.model_validate(values)
    except ValidationError as exc:
        raise _error(exc, values, options) from None


@functools.lru_cache
def get_settings() -> Settings:
    """Settings from the environment, cached."""
    return settings_from_env()
