"""Link engines: what integrates a Sim's links while asr's C core runs the actuators.

One module per engine, each defining `Engine`, a subclass of asr.engines.base.LinkEngine:
mujoco (the robot's MJCF) and gazebo (gz-physics with DART on its SDF). A new engine is a new
module listed in ENGINES; asr.Sim and the controllers only use the LinkEngine interface.
"""

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from asr.engines.base import LinkEngine
    from asr.robots.robot import Robot

# {name: module}: the engines asr.Sim(engine=...) accepts.
ENGINES = {"mujoco": "asr.engines.mujoco", "gazebo": "asr.engines.gazebo"}


def check(name: object) -> str:
    """name, when it names an engine; ValueError listing them otherwise."""
    if not isinstance(name, str) or name not in ENGINES:
        raise ValueError(f"engine: got {name!r}, valid: {', '.join(map(repr, ENGINES))}")
    return name


def create(
    name: str, robot: "Robot", n_instances: int, mujoco_params: Mapping[str, Any] | None = None
) -> "LinkEngine":
    """The link engine `name` for n_instances of robot (an asr.Robot). mujoco_params: MuJoCo
    model fields per instance (see asr.engines.mujoco.MUJOCO_FIELDS), refused by the others."""
    engine: LinkEngine = importlib.import_module(ENGINES[check(name)]).Engine(
        robot, n_instances, mujoco_params
    )
    return engine


__all__ = ["ENGINES", "check", "create"]
