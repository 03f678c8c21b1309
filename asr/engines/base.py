"""The link engine interface asr.Sim composes with its actuator batch.

An engine owns N instances of the robot's links (one per Sim instance) and hands the C core an
asr_engine struct (csrc/engine/asr_engine.h: its step halves and pointers into its state), so the
C rollout couples any engine the same way. Everything else about the engine's own data stays in
its module: the Sim and the controllers go through this interface (a controller reads what it
needs through it and builds its own C part; the engine knows no controller).
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from asr.common import validate as V
from asr.common.validate import CData, FloatArray
from asr.core.ffi import ffi

if TYPE_CHECKING:
    from asr.core.batch import Batch
    from asr.robots.robot import Robot

# instance indices (asr.common.validate.instance_indices: C ints)
IndexArray = npt.NDArray[np.integer[Any]]
K = TypeVar("K")
V_ = TypeVar("V_")


@dataclass(frozen=True)
class SceneGeometry:
    """A robot's visible shapes for a 3-D view (LinkEngine.scene_geometry), G of them, each a
    triangle mesh in its own frame: names (G,), bodies (G,) the index of the body each moves
    with, rgba (G, 4) colours in [0, 1], vertices (G,) arrays (V, 3) m, faces (G,) arrays
    (F, 3) of vertex indices, extent a length covering the robot, m."""

    names: tuple[str, ...]
    bodies: tuple[int, ...]
    rgba: FloatArray
    vertices: tuple[FloatArray, ...]
    faces: tuple[IndexArray, ...]
    extent: float


def mapping(value: Mapping[K, V_] | None, name: str) -> Mapping[K, V_]:
    """value, a mapping (None: empty); TypeError naming the argument otherwise."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{name}: expected a mapping (dict), got {type(value).__name__} {value!r}")
    return value


def c_table(keep: list[CData], ctype: str, values: Iterable[Any]) -> CData:
    """A C array ctype[] of values, kept alive by the list keep."""
    arr = ffi.new(f"{ctype}[]", values)
    keep.append(arr)
    return arr


def c_engine_struct(
    keep: list[CData],
    steps: Iterable[Any],
    models: Iterable[int],
    datas: Iterable[int],
    qpos: Iterable[int],
    qvel: Iterable[int],
    qfrc: Iterable[int],
    qpos_adr: Iterable[int],
    dof_adr: Iterable[int],
) -> CData:
    """The asr_engine* the C rollout drives (csrc/engine/asr_engine.h), kept alive by keep: steps,
    the two step halves (function addresses or pointers); models, datas, qpos, qvel, qfrc, each
    instance's addresses (ints) of its model, data, generalized positions, velocities and
    applied forces; qpos_adr, dof_adr the actuated joints' indices in them."""
    e = ffi.new("asr_engine*")
    keep.append(e)
    e.step1, e.step2 = (ffi.cast("asr_engine_fn", f) for f in steps)
    e.model = c_table(keep, "void*", [ffi.cast("void*", a) for a in models])
    e.data = c_table(keep, "void*", [ffi.cast("void*", a) for a in datas])
    for field, addresses in (("qpos", qpos), ("qvel", qvel), ("qfrc", qfrc)):
        setattr(e, field, c_table(keep, "double*", [ffi.cast("double*", a) for a in addresses]))
    e.qpos_adr = c_table(keep, "int", [int(k) for k in qpos_adr])
    e.dof_adr = c_table(keep, "int", [int(k) for k in dof_adr])
    return e


class LinkEngine:
    """N instances of a robot's links in one engine. Subclasses set, in __init__: name (as
    asr.Sim's engine=), label (for messages), timestep_name (what sets dt, for hints), dt (s),
    c_engine (an asr_engine* of asr.core.ffi, kept alive by the engine) and the joint addresses
    (_set_addresses), and implement reset, q, qd and time; gravity, site_state, body_state,
    joint_friction and the 3-D view's scene_geometry, geom_poses and geom_poses_at where the
    engine can tell (else NotImplementedError naming the engine)."""

    name: str
    label: str
    timestep_name: str
    dt: float

    def __init__(self, robot: "Robot", n_instances: int) -> None:
        self.robot, self.n_instances = robot, n_instances
        self.c_engine: CData = None

    def _set_addresses(self, qpos_adr: npt.ArrayLike, dof_adr: npt.ArrayLike) -> None:
        """Private index arrays (used internally, never handed out) and read-only copies of
        them for the public properties: an edited public array cannot redirect an index."""
        self._qpos_adr = np.array(qpos_adr, dtype=np.intp)
        self._dof_adr = np.array(dof_adr, dtype=np.intp)
        self.public_adr = tuple(V.read_only(a, np.intp) for a in (self._qpos_adr, self._dof_adr))

    @property
    def models(self) -> tuple[Any, ...]:
        """The engine's per-instance models where it has Python objects for them, else ()."""
        return ()

    @property
    def datas(self) -> tuple[Any, ...]:
        """The engine's per-instance data where it has Python objects for them, else ()."""
        return ()

    def check_q0(self, q: FloatArray | None) -> None:
        """Refuse initial link angles (N, J) the engine cannot take (ValueError naming q0); None:
        the engine's own."""

    def reset(self, q: FloatArray | None, instances: IndexArray | None) -> None:
        """Reset these instances (indices, None: all) at rest, with link angles q (N, J) rad
        (None: the engine's own initial positions)."""
        raise NotImplementedError

    def q(self) -> FloatArray:
        """(N, J) link angles of the actuated joints, rad (a copy)."""
        raise NotImplementedError

    def qd(self) -> FloatArray:
        """(N, J) link velocities of the actuated joints, rad/s (a copy)."""
        raise NotImplementedError

    def time(self) -> float:
        """Simulated time of instance 0, s."""
        raise NotImplementedError

    def gravity(self) -> FloatArray:
        """(3,) gravitational acceleration in the world frame, m/s^2 (a copy)."""
        raise self.unavailable("gravity")

    def site_state(self, i: int, name: str) -> tuple[FloatArray, FloatArray]:
        """Instance i's site `name` now: world position (3,) m and linear velocity (3,) m/s."""
        raise self.unavailable(f"site_state({name!r})")

    def body_state(self, i: int, name: str) -> tuple[FloatArray, FloatArray]:
        """Instance i's body `name` now: world position of its frame (3,) m and that point's
        linear velocity (3,) m/s."""
        raise self.unavailable(f"body_state({name!r})")

    def joint_friction(self, i: int) -> FloatArray:
        """(J,) static (dry) friction of instance i's actuated joints in the engine, N m."""
        raise self.unavailable("joint_friction")

    def scene_geometry(self) -> SceneGeometry:
        """The robot's visible shapes as meshes, for a 3-D view (the same in every instance)."""
        raise self.unavailable("scene_geometry")

    def geom_poses(self, i: int) -> FloatArray:
        """(G, 12) world poses of scene_geometry's shapes in instance i now: position (3,) m,
        then rotation matrix (9,) row-major (a vertex v is at pos + R v)."""
        raise self.unavailable("geom_poses")

    def geom_poses_at(
        self, i: int, q: npt.ArrayLike, base: npt.ArrayLike | None = None
    ) -> FloatArray:
        """geom_poses(i) with the actuated joints at link angles q (J,) rad instead, and the free
        joints at base (7 F,) (free_base_adr's entries; None: as they are), the rest of instance
        i as it is; computed on the engine's scratch data (the instance is left as it is)."""
        raise self.unavailable("geom_poses_at")

    def qpos_size(self) -> int:
        """Entries of each instance's generalized positions (MuJoCo: nq; an engine with the
        actuated joints' angles only: J)."""
        return len(self.robot.joints)

    def free_base_adr(self) -> IndexArray:
        """(7 F,) int: the addresses in the generalized positions of the poses of the robot's F
        free joints (a free base: position m, unit quaternion w x y z each), in joint order;
        empty for a robot without one or an engine that has none."""
        return np.zeros(0, np.intp)

    def unavailable(self, what: str) -> NotImplementedError:
        """The error for what this engine cannot give (raised by the caller)."""
        return NotImplementedError(
            f"{what}: not available with engine={self.name!r} ({self.label})"
        )

    def link_inertia(self, i: int, j: int) -> float | None:
        """Instance i's link inertia about actuated joint j now, kg m^2, or None when the engine
        cannot tell."""
        return None

    def run_start(self) -> Any:
        """Before a rollout: what check_run needs to tell the engine's warnings of the run."""
        return None

    def check_run(self, before: Any, batch: "Batch", steps: int, on_error: str) -> None:
        """After a rollout of `steps` steps: report the engine's own failures (freeze the
        instances it gave up on in batch, raise or warn as on_error says)."""


__all__ = ["LinkEngine", "SceneGeometry", "c_engine_struct", "c_table", "mapping"]
