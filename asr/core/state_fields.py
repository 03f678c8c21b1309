"""The state fields of asr.Batch as typed read-only properties (batch.q, batch.tau_joint,
...): live (N, J) views of the state block. GENERATED from the C field table
(csrc/core/asr_fields.h) by asr.core.batch_inputs.write_state_fields(); do not edit.
"""

from asr.common.validate import FloatArray


class StateFields:
    """Typed access to the state views {field: (N, J) read-only view} a Batch holds."""

    _views: dict[str, FloatArray]

    @property
    def tau_joint(self) -> FloatArray:
        """tau_link + tau_ext: the torque the rigid-body engine applies, N m."""
        return self._views["tau_joint"]

    @property
    def tau_link(self) -> FloatArray:
        """actuator torque on the link: the elastic torque tau_el1 + tau_el2 (compliant modes) or
        the commanded or link-PID torque (rigid modes), minus the output-shaft friction tau_fq, N
        m."""
        return self._views["tau_link"]

    @property
    def stiffness(self) -> FloatArray:
        """link stiffness of the springs, -d(tau_el1 + tau_el2)/dq, N m/rad."""
        return self._views["stiffness"]

    @property
    def tau_el1(self) -> FloatArray:
        """elastic torque of spring 1 on the link, N m."""
        return self._views["tau_el1"]

    @property
    def tau_el2(self) -> FloatArray:
        """elastic torque of spring 2 on the link, N m."""
        return self._views["tau_el2"]

    @property
    def defl1(self) -> FloatArray:
        """deflection of spring 1 after clamping, rad."""
        return self._views["defl1"]

    @property
    def defl2(self) -> FloatArray:
        """deflection of spring 2 after clamping, rad."""
        return self._views["defl2"]

    @property
    def th1(self) -> FloatArray:
        """motor 1 angle, rad."""
        return self._views["th1"]

    @property
    def th2(self) -> FloatArray:
        """motor 2 angle; adjuster models: the stiffness input (awas2: the pivot position, m), rad
        or m."""
        return self._views["th2"]

    @property
    def th1d(self) -> FloatArray:
        """motor 1 velocity, rad/s."""
        return self._views["th1d"]

    @property
    def th2d(self) -> FloatArray:
        """motor 2 velocity; adjuster models: the stiffness input's rate, rad/s or m/s."""
        return self._views["th2d"]

    @property
    def tau_m1(self) -> FloatArray:
        """motor 1 drive torque after limits, N m."""
        return self._views["tau_m1"]

    @property
    def tau_m2(self) -> FloatArray:
        """motor 2 drive torque after limits, N m."""
        return self._views["tau_m2"]

    @property
    def tau_f1(self) -> FloatArray:
        """motor 1 friction torque, N m."""
        return self._views["tau_f1"]

    @property
    def tau_f2(self) -> FloatArray:
        """motor 2 friction torque, N m."""
        return self._views["tau_f2"]

    @property
    def tau_fq(self) -> FloatArray:
        """output-shaft friction torque (already subtracted in tau_link), N m."""
        return self._views["tau_fq"]

    @property
    def w1(self) -> FloatArray:
        """motor 1 friction stick point, rad."""
        return self._views["w1"]

    @property
    def w2(self) -> FloatArray:
        """motor 2 friction stick point, rad."""
        return self._views["w2"]

    @property
    def wq(self) -> FloatArray:
        """output-shaft friction stick point, rad."""
        return self._views["wq"]

    @property
    def int1(self) -> FloatArray:
        """motor 1 PID error integral, rad s."""
        return self._views["int1"]

    @property
    def int2(self) -> FloatArray:
        """motor 2 PID error integral, rad s."""
        return self._views["int2"]

    @property
    def intq(self) -> FloatArray:
        """link PID error integral, rad s."""
        return self._views["intq"]

    @property
    def cmd1(self) -> FloatArray:
        """motor 1 controller output held between ticks: a torque in N m, or with drive = 1 a
        voltage command normalised to v_supply."""
        return self._views["cmd1"]

    @property
    def cmd2(self) -> FloatArray:
        """motor 2 controller output held between ticks: a torque in N m, or with drive = 1 a
        voltage command normalised to v_supply."""
        return self._views["cmd2"]

    @property
    def ctrl_timer(self) -> FloatArray:
        """time until the next controller tick, s."""
        return self._views["ctrl_timer"]

    @property
    def q(self) -> FloatArray:
        """link angle seen by the last step, rad."""
        return self._views["q"]

    @property
    def qd(self) -> FloatArray:
        """link velocity seen by the last step, rad/s."""
        return self._views["qd"]

    @property
    def ref1(self) -> FloatArray:
        """first reference of the last step (unit per mode)."""
        return self._views["ref1"]

    @property
    def ref2(self) -> FloatArray:
        """second reference of the last step (unit per mode)."""
        return self._views["ref2"]

    @property
    def tau_ext(self) -> FloatArray:
        """external link torque of the last step, N m."""
        return self._views["tau_ext"]

    @property
    def clamped(self) -> FloatArray:
        """springs at their deflection limit in the last step (0, 1 or 2)."""
        return self._views["clamped"]

    @property
    def clamp_steps(self) -> FloatArray:
        """steps since reset with at least one spring at its deflection limit."""
        return self._views["clamp_steps"]
