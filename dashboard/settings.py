"""Dashboard settings: a pydantic model, read once from ASR_DASHBOARD_* environment variables by
get_settings() (cached) and overridable in tests (create_app(settings) or
app.dependency_overrides[get_settings])."""
import functools
import os

from pydantic import BaseModel, ConfigDict, Field

ENV_PREFIX = "ASR_DASHBOARD_"


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    robot: str = Field("qbmove_arm_2dof", description="robot simulated at start")
    variant: str | None = Field("vertical", description="its variant (None: the default one)")
    update_hz: float = Field(30.0, gt=0, le=240, description="frames per second sent to clients")
    window_s: float = Field(10.0, gt=0, le=600, description="plotted history, s")
    n_compare_max: int = Field(8, ge=1, le=64, description="most instances in compare mode")
    max_samples: int = Field(50, ge=1, le=1000, description="most samples per frame")
    threads: int = Field(1, ge=1, le=64, description="asr threads of the simulation")


@functools.lru_cache
def get_settings() -> Settings:
    """Settings from the environment (ASR_DASHBOARD_ROBOT, ..._UPDATE_HZ, ...), cached."""
    values = {}
    for name in Settings.model_fields:
        raw = os.environ.get(ENV_PREFIX + name.upper())
        if raw is not None:
            values[name] = raw
    return Settings.model_validate(values)
