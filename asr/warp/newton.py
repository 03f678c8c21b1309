# mypy: disable-error-code="valid-type,name-defined"
"""asr's actuators as a Newton drive: a qbmove, SEA or any asr joint in a Newton model.

`AsrDrive` is a `newton.actuators.DriveBase` (Newton 1.8, the extra [warp]) that steps asr's
actuator equations in Warp kernels (`asr.warp.batch.WarpBatch`, one instance per actuated DOF,
one asr joint each) inside Newton's `Actuator`:

    builder.add_actuator(AsrDrive, index=builder.joint_qd_start[j], model="qbmove", mode=6,
                         k=0.0227, a=6.7328)
    model = builder.finalize()                     # one Actuator per distinct joint description
    actuator = model.actuators[0]
    s0, s1 = actuator.state(), actuator.state()    # Actuator.State; .drive_state: AsrDrive.State
    control.joint_target_q[dof] = equilibrium      # the first reference (units per mode)
    control.asr_ref2[dof] = preset                 # the second reference: a custom Control input
    control.joint_f.zero_()
    actuator.step(state, control, s0, s1, dt)      # adds the joint torque to control.joint_f
    s0, s1 = s1, s0

What goes where:

- The drive's arguments (`resolve_arguments`): `model` (an asr model name, required), `mode`
  (0-6, asr's default for the model when left out), any of the model's parameters (scalars, SI
  units, asr's names; names read from USD in snake case match asr's names case-insensitively),
  and the drive's own `dtype` ("float64" or "float32": the precision of asr's state and
  kernels), `max_substep` (s), `motor_scheme` and `ref2` (the second reference used when the
  Control carries no `asr_ref2`). asr checks every value (a 1-instance asr.Batch is built with
  them: a bad value is asr's ValueError naming the parameter, value and valid range). All of them
  are Newton "shared" parameters, so DOFs with equal descriptions form one Actuator; DOFs that
  differ form several.
- Inputs per DOF: the link angle and velocity from Newton's State (`joint_q`, `joint_qd`, rad,
  rad/s), the first reference from `joint_target_q`, the second from the Control's `asr_ref2`
  (registered by ModelBuilder.finalize as a float32 per-DOF Control array, default 0), the
  feed-forward motor torque from `joint_act` (N m; single-motor joints only, ignored on
  two-motor joints). `joint_target_qd` is not read: no asr mode takes a velocity reference.
- Output: asr's joint torque (field tau_joint, N m) into Newton's force buffer, added to
  `joint_f` by the Actuator.
- Precision: Newton's State, Control and force arrays are float32; the drive rounds nothing
  else: with dtype "float64" asr's state and equations stay float64 (inputs widened from
  float32, the torque rounded to float32 only when handed to Newton).
- State (`AsrDrive.State`): asr's state record per DOF (N, 1, NFIELD) and the instance statuses
  (N,); a NaN or infinite input stops only its own DOF (zero torque, status nonzero) as on the
  CPU, until `reset` with a mask selecting it. `reset(mask, q0=..., refs=...)` zeroes the masked
  DOFs' state and status and starts them from link angle q0 (rad) with motors where refs put
  them (asr.Batch.reset's meaning). Newton double-buffers actuator states: each step copies the
  state into the drive's WarpBatch and the advanced state out to the next one (device copies,
  no host synchronisation).
- Per-DOF values (a sweep across worlds): after finalize, `actuator.drive.batch.set_param(0,
  name, values)` with values (N,), one per DOF of the Actuator.
- Not supported: Newton's implicit effort mode (it needs a stateless force law; asr's actuator
  has motor state); Newton raises NotImplementedError for it.

Newton's USD path: `register_usd()` maps the API schema "AsrActuatorAPI" to this drive
(`newton.actuators.register_actuator_component`); a NewtonActuator prim with it applied becomes an
AsrDrive whose arguments are the prim's authored `newton:` attributes (`newton:model`,
`newton:mode`, `newton:k`, `newton:motorJ`, ...). Parsing needs Newton's USD importer (OpenUSD,
usd-core, and newton-usd-schemas; asr does not install them). asr ships no USD schema definition
of AsrActuatorAPI, and without one Newton hands every `newton:` attribute of the prim to each
applied API: an AsrActuatorAPI prim carries no other actuator API (AsrDrive refuses names it does
not know).
"""

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from asr.common.optional import need
from asr.core import Batch, Joint, models
from asr.core.model_registry import BUILTIN_MODELS
from asr.warp.batch import WarpBatch
from asr.warp.runtime import warp

wp = warp()
_actuators = need("newton.actuators", "warp", "asr.warp.newton")

__all__ = ["AsrDrive", "REF2_INPUT", "USD_SCHEMA", "register_usd"]

REF2_INPUT = "asr_ref2"
"""Name of the Control attribute carrying the second reference per DOF (units per mode)."""
USD_SCHEMA = "AsrActuatorAPI"
"""USD API schema token `register_usd` registers for this drive."""

# the drive's own arguments, next to asr's model parameters
_OWN = {"model", "mode", "dtype", "max_substep", "motor_scheme", "ref2"}
_DTYPES = ("float64", "float32")


def _builtin_param_names() -> set[str]:
    """asr's parameter names of the built-in models, and their lower case (USD's snake case)."""
    table = models()
    names = {p.name for name in BUILTIN_MODELS for p in table[name].all_params}
    return names | {n.lower() for n in names}


@wp.kernel
def _gather(
    positions: wp.array(dtype=wp.float32),
    velocities: wp.array(dtype=wp.float32),
    target_pos: wp.array(dtype=wp.float32),
    feedforward: wp.array(dtype=wp.float32),
    ref2_in: wp.array(dtype=wp.float32),
    pos_indices: wp.array(dtype=wp.uint32),
    vel_indices: wp.array(dtype=wp.uint32),
    target_pos_indices: wp.array(dtype=wp.uint32),
    target_vel_indices: wp.array(dtype=wp.uint32),
    ref2_default: wp.float64,
    q: wp.array2d(dtype=Any),
    qd: wp.array2d(dtype=Any),
    refs: wp.array3d(dtype=Any),
    tau_ff: wp.array2d(dtype=Any),
):
    """Newton's flat per-DOF arrays into the (N, 1) and (N, 1, 2) inputs of the asr step."""
    i = wp.tid()
    q[i, 0] = q.dtype(positions[pos_indices[i]])
    qd[i, 0] = qd.dtype(velocities[vel_indices[i]])
    refs[i, 0, 0] = refs.dtype(target_pos[target_pos_indices[i]])
    if ref2_in:
        refs[i, 0, 1] = refs.dtype(ref2_in[vel_indices[i]])
    else:
        refs[i, 0, 1] = refs.dtype(ref2_default)
    if feedforward:
        tau_ff[i, 0] = tau_ff.dtype(feedforward[target_vel_indices[i]])


@wp.kernel
def _scatter(tau: wp.array2d(dtype=Any), forces: wp.array(dtype=wp.float32)):
    """asr's joint torque (N, 1) into Newton's force buffer (N,), rounded to float32."""
    i = wp.tid()
    forces[i] = wp.float32(tau[i, 0])


def _real(value: Any, name: str) -> float:
    """A finite real argument, or ValueError naming it."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"AsrDrive: {name} must be a real number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"AsrDrive: {name} must be finite, got {x}")
    return x


def _canonical(spec_names: list[str], name: str) -> str | None:
    """asr's parameter name for `name`, matched exactly or case-insensitively (USD's snake
    case lowers asr's capitals: motor_J is read as motor_j)."""
    if name in spec_names:
        return name
    low = [n for n in spec_names if n.lower() == name.lower()]
    return low[0] if len(low) == 1 else None


class AsrDrive(_actuators.DriveBase):  # type: ignore[misc]
    """asr's actuator step as a Newton drive: one asr joint (model, mode, parameters) per DOF.

    Built by Newton (`ModelBuilder.add_actuator(AsrDrive, index=..., model=..., ...)`, see the
    module doc) or directly: `AsrDrive(model="sea", k=100.0)` then `newton.actuators.Actuator(
    indices=..., drive=drive)`. Arguments as `resolve_arguments` returns them."""

    @dataclass
    class State(_actuators.DriveBase.State):  # type: ignore[misc]
        """asr's state of every DOF of one Actuator.

        fields: (N, 1, NFIELD) asr's state record per DOF (asr.FIELDS, their units in
            asr.FIELD_UNITS), the drive's dtype.
        status: (N,) int32, 0 running, else the asr status that stopped the DOF
            (asr.Batch.status); bad_joint (N,) int32 and bad_step (N,) int64 with it.
        drive: the AsrDrive that made it (its reset runs asr's reset).
        """

        fields: Any = None
        status: Any = None
        bad_joint: Any = None
        bad_step: Any = None
        drive: Any = None

        def arrays(self) -> tuple[Any, Any, Any, Any]:
            """fields, status, bad_joint, bad_step: the device arrays this state holds."""
            return self.fields, self.status, self.bad_joint, self.bad_step

        def reset(self, mask: Any = None, *, q0: Any = 0.0, refs: Any = None) -> None:
            """Zero the state and status of the DOFs in `mask` ((N,) bool, a Warp array on the
            drive's device or NumPy; None: all) and start them from link angles q0 ((N,) or
            scalar, rad) with motors where refs ((N, 2), units per mode; None: zero
            deflection) put them. asr checks q0 and refs (ValueError naming them)."""
            self.drive.reset_state(self, mask, q0=q0, refs=refs)

        def assign(self, other: "AsrDrive.State") -> None:
            """Copy `other`'s state and statuses into this one (same storage kept)."""
            for dst, src in zip(self.arrays(), other.arrays()):
                wp.copy(dst, src)

    # every argument is shared: Newton groups DOFs of equal descriptions into one Actuator and
    # never turns a parameter into a float32 array
    SHARED_PARAMS: ClassVar[set[str]] = _OWN | _builtin_param_names()
    custom_inputs: tuple[str, ...] = (REF2_INPUT,)

    @classmethod
    def resolve_arguments(cls, args: dict[str, Any]) -> dict[str, Any]:
        """The drive's arguments with defaults filled in, checked by asr: `model` (required),
        `mode` (int 0-6), the model's parameters (float), `dtype`, `max_substep` (s),
        `motor_scheme`, `ref2` (the default second reference). ValueError naming the argument,
        its value and the valid range or names."""
        args = dict(args)
        name = args.pop("model", None)
        table = models()
        if name is None:
            raise ValueError(
                f"AsrDrive: the argument 'model' is required; valid: {', '.join(table)}"
            )
        if name not in BUILTIN_MODELS:
            what = "a user model, not on Warp yet" if name in table else "unknown"
            valid = ", ".join(BUILTIN_MODELS)
            raise ValueError(f"AsrDrive: model {name!r} is {what}; valid: {valid}")
        spec = table[name]
        dtype = args.pop("dtype", "float64")
        if dtype not in _DTYPES:
            raise ValueError(f"AsrDrive: dtype {dtype!r} is invalid; valid: {', '.join(_DTYPES)}")
        ref2 = _real(args.pop("ref2", 0.0), "ref2")
        mode = args.pop("mode", None)
        max_substep = _real(args.pop("max_substep", 1e-3), "max_substep")
        motor_scheme = args.pop("motor_scheme", "euler")
        names = [p.name for p in spec.all_params]
        given: dict[str, float] = {}  # as named by the caller (USD: lower case)
        params: dict[str, Any] = {}  # asr's names
        for key, value in args.items():
            canon = _canonical(names, key)
            if canon is None:
                raise ValueError(
                    f"AsrDrive: model {name!r} has no parameter {key!r}; valid: {', '.join(names)}"
                )
            given[key] = params[canon] = _real(value, canon)
        # asr's own checks: values and ranges, the mode against the model, the sub-step, the
        # motor scheme, a second reference bounded by a parameter (AwAS-II's pivot)
        probe = Batch(
            [Joint(name, mode, params)], 1, max_substep=max_substep, motor_scheme=motor_scheme
        )
        probe.check_refs(np.array([[[0.0, ref2]]]), "ref2")
        return {
            "model": name,
            "mode": int(probe.modes[0]),
            "dtype": dtype,
            "max_substep": max_substep,
            "motor_scheme": motor_scheme,
            "ref2": ref2,
            **given,
        }

    def __init__(self, **kwargs: Any) -> None:
        """kwargs: as resolve_arguments accepts them (resolved again here, so a drive built
        directly is checked as one built by ModelBuilder)."""
        resolved = self.resolve_arguments(kwargs)
        self.model: str = resolved.pop("model")
        self.mode: int = resolved.pop("mode")
        self.dtype: str = resolved.pop("dtype")
        self.max_substep: float = resolved.pop("max_substep")
        self.motor_scheme: str = resolved.pop("motor_scheme")
        self.ref2: float = resolved.pop("ref2")
        names = [p.name for p in models()[self.model].all_params]
        self.params: dict[str, float] = {_canonical(names, k) or k: v for k, v in resolved.items()}
        self.nmotor = models()[self.model].nmotor
        self.batch: WarpBatch | None = None

    def joint(self) -> Joint:
        """The asr joint every DOF of this drive runs."""
        return Joint(self.model, self.mode, dict(self.params))

    def finalize(self, device: Any, num_actuators: int) -> None:
        """Newton's hook: the Warp batch of `num_actuators` instances and its input buffers."""
        self.batch = WarpBatch(
            [self.joint()],
            num_actuators,
            dtype=self.dtype,
            device=device,
            max_substep=self.max_substep,
            motor_scheme=self.motor_scheme,
        )
        n, dt = num_actuators, self._wp_dtype()
        self._q = wp.zeros((n, 1), dtype=dt, device=device)
        self._qd = wp.zeros((n, 1), dtype=dt, device=device)
        self._refs = wp.zeros((n, 1, 2), dtype=dt, device=device)
        self._ff = wp.zeros((n, 1), dtype=dt, device=device)

    def _wp_dtype(self) -> Any:
        return wp.float64 if self.dtype == "float64" else wp.float32

    def _need_batch(self) -> WarpBatch:
        if self.batch is None:
            raise RuntimeError("AsrDrive: not finalized; build it into a newton.actuators.Actuator")
        return self.batch

    def is_stateful(self) -> bool:
        return True

    def is_graphable(self) -> bool:
        return True

    def state(self, num_actuators: int, device: Any) -> "AsrDrive.State":
        """A new state: every DOF at rest at link angle 0, motors at zero deflection."""
        b = self._need_batch()
        if num_actuators != b.n_instances:
            raise ValueError(
                f"AsrDrive.state: num_actuators {num_actuators} differs from the "
                f"{b.n_instances} DOFs the drive was finalized for"
            )
        code, bad_joint, bad_step = b.status_arrays
        st = AsrDrive.State(
            fields=wp.zeros_like(b.state),
            status=wp.zeros_like(code),
            bad_joint=wp.zeros_like(bad_joint),
            bad_step=wp.zeros_like(bad_step),
            drive=self,
        )
        st.reset()
        return st

    def reset_state(self, st: "AsrDrive.State", mask: Any, *, q0: Any, refs: Any) -> None:
        """AsrDrive.State.reset's work: asr's reset of the masked DOFs, on the device."""
        b = self._need_batch()
        n = b.n_instances
        self._load(b, st)
        q = np.broadcast_to(np.asarray(q0, dtype=float), (n,)).reshape(n, 1)
        r = None if refs is None else np.broadcast_to(np.asarray(refs, dtype=float), (n, 2))
        b.reset(q, None if r is None else r.reshape(n, 1, 2), mask=mask)
        self._store(b, st)

    @staticmethod
    def _load(b: WarpBatch, st: "AsrDrive.State") -> None:
        for dst, src in zip((b.state, *b.status_arrays), st.arrays()):
            wp.copy(dst, src)

    @staticmethod
    def _store(b: WarpBatch, st: "AsrDrive.State") -> None:
        for dst, src in zip(st.arrays(), (b.state, *b.status_arrays)):
            wp.copy(dst, src)

    def compute(
        self,
        positions: Any,
        velocities: Any,
        target_pos: Any,
        target_vel: Any,
        feedforward: Any,
        pos_indices: Any,
        vel_indices: Any,
        target_pos_indices: Any,
        target_vel_indices: Any,
        forces: Any,
        state: "AsrDrive.State",
        dt: float,
        device: Any = None,
        *,
        custom_inputs: dict[str, Any] | None = None,
    ) -> None:
        """One asr step of every DOF from `state` (left unchanged; update_state writes the next
        state): Newton's arrays gathered into asr's inputs, the torque scattered into
        forces (N,), N m. dt: s."""
        del target_vel  # no asr mode takes a velocity reference
        b = self._need_batch()
        if state is None:
            raise ValueError("AsrDrive is stateful: step the Actuator with actuator.state() states")
        ref2 = (custom_inputs or {}).get(REF2_INPUT)
        self._load(b, state)
        n = b.n_instances
        use_ff = self.nmotor == 1 and feedforward is not None
        wp.launch(
            _gather,
            dim=n,
            inputs=[
                positions,
                velocities,
                target_pos,
                feedforward if use_ff else None,
                ref2,
                pos_indices,
                vel_indices,
                target_pos_indices,
                target_vel_indices,
                wp.float64(self.ref2),
            ],
            outputs=[self._q, self._qd, self._refs, self._ff],
            device=b.device,
        )
        tau = b.launch_step(dt, self._q, self._qd, self._refs, tau_ff=self._ff if use_ff else None)
        wp.launch(_scatter, dim=n, inputs=[tau], outputs=[forces], device=b.device)

    def update_state(self, current_state: "AsrDrive.State", next_state: "AsrDrive.State") -> None:
        """The state compute advanced into next_state."""
        self._store(self._need_batch(), next_state)


def register_usd() -> None:
    """Register AsrDrive for Newton's USD actuator parsing under the API schema USD_SCHEMA
    ("AsrActuatorAPI"): a NewtonActuator prim with it applied gets an AsrDrive whose arguments
    are the prim's authored `newton:` attributes. Parsing needs OpenUSD (pxr)."""
    _actuators.register_actuator_component(USD_SCHEMA, AsrDrive, _actuators.ComponentKind.DRIVE)
