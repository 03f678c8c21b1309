"""Request bodies of the dashboard API (pydantic v2, unknown fields rejected, values ranged,
NaN and infinities refused: Python's json reads NaN, Infinity and -Infinity).

Ranges that depend on the robot (a preset inside its model's range, a parameter name valid for
the joint's model) are checked by the runner, which answers 422 with asr's message."""

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Speed = Literal["max"] | Annotated[float, Field(gt=0, le=100)]
JointName = Annotated[str, Field(min_length=1, max_length=100)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class RobotChoice(Strict):
    robot: str = Field(
        ..., min_length=1, max_length=200, description="robot name (GET /api/robots)"
    )
    variant: str | None = Field(None, max_length=200, description="variant (default: the robot's)")


class Gains(Strict):
    """Actuator parameters of a joint; the common ones are listed, any other asr parameter of
    the joint's model may be given too (checked against asr's ranges)."""

    model_config = ConfigDict(extra="allow")
    kp: float | None = Field(None, ge=0, le=1e6, description="motor PID proportional gain")
    ki: float | None = Field(None, ge=0, le=1e6, description="motor PID integral gain")
    kd: float | None = Field(None, ge=0, le=1e6, description="motor PID derivative gain")

    @model_validator(mode="after")
    def _short_names(self):
        # the other names are checked by asr, whose message repeats them: keep them short
        for name in self.model_extra or {}:
            if len(name) > 100:
                raise ValueError(f"parameter name of {len(name)} characters; at most 100")
        return self


class Reference(Strict):
    """Reference generator of one joint (rad, Hz, s, N m). A field not given keeps the value in
    effect (a control changes only what it names: re-entering the frequency keeps the offset);
    a workspace's missing fields keep the loaded robot's. The torques are the inputs of the
    torque modes (docs/models.md sec. 4): mode 0 the link torque (ref1, N m), mode 4 the motor
    commands ref1, ref2 (N m, or the normalised PWM command in [-1, 1] with `drive` = 1); the
    runner checks them against the joint's limits."""

    kind: Literal["step", "sine", "chirp", "minjerk", "hold"] | None = None
    amplitude: float | None = Field(None, ge=-10, le=10, description="rad")
    frequency: float | None = Field(None, ge=0, le=50, description="Hz (sine; chirp start)")
    frequency_end: float | None = Field(None, ge=0, le=50, description="Hz (chirp end)")
    period: float | None = Field(
        None, gt=0, le=3600, description="s (chirp sweep / minjerk duration)"
    )
    offset: float | None = Field(None, ge=-10, le=10, description="rad")
    torque: float | None = Field(
        None, ge=-100, le=100, description="mode 0: link torque, N m; mode 4: motor 1 command"
    )
    torque2: float | None = Field(None, ge=-100, le=100, description="mode 4: motor 2 command")


class Control(Strict):
    preset: dict[JointName, Annotated[float, Field(ge=0, le=10000.0)]] | None = None
    mode: dict[JointName, Annotated[int, Field(ge=0, le=6)]] | None = None
    params: dict[JointName, Gains] | None = None
    reference: dict[JointName, Reference] | None = None
    speed: Speed | None = None
    paused: bool | None = None


class Push(Strict):
    joint: JointName = Field(..., description="joint name")
    torque: float = Field(..., ge=-100, le=100, description="N m")
    duration: float = Field(0.05, gt=0, le=10, description="s")


class Compare(Strict):
    presets: list[Annotated[float, Field(ge=0, le=1e4)]] = Field(
        ...,
        max_length=64,
        description="one preset per instance ([] leaves compare mode); at "
        "most n_compare_max values",
    )


class ILCStart(Strict):
    """An ILC run ([Mengacci2021] sec. 4.3; dashboard/ilc.py): gain schedule K(n) = gain
    exp(-n / gain_decay), the paper's 0.5 exp(-n/10) by default."""

    iterations: int = Field(20, ge=1, le=50, description="most trials")
    preset: float = Field(0.2, ge=0, le=1e4, description="held preset (model units)")
    duration: float = Field(5.0, gt=0, le=60, description="min-jerk 0 -> target duration, s")
    gain: float = Field(0.5, ge=0, le=10, description="learning gain K(0), rad/rad")
    gain_decay: float | None = Field(
        10.0,
        gt=0,
        le=1e6,
        description="K(n) = gain exp(-n / gain_decay), iterations; null: constant gain",
    )
    lowpass_hz: float | None = Field(
        None,
        gt=0,
        le=1e4,
        description="zero-phase low-pass filter of each update, cut-off in Hz; null: none",
    )
    target: float = Field(0.8, ge=-3.2, le=3.2, description="rad, every joint")
    tol: float = Field(0.08, gt=0, le=10, description="rad, converged when max |e| <= tol")
    settle_s: float = Field(1.0, ge=0, le=10, description="s held at the start before a trial")


class Workspace(Strict):
    robot: str = Field(..., min_length=1, max_length=200)
    variant: str | None = Field(None, max_length=200)
    preset: dict[JointName, Annotated[float, Field(ge=0, le=10000.0)]] | None = None
    mode: dict[JointName, Annotated[int, Field(ge=0, le=6)]] | None = None
    params: dict[JointName, Gains] | None = None
    reference: dict[JointName, Reference] | None = None
    speed: Speed = 1.0
    paused: bool = False
    compare: list[Annotated[float, Field(ge=0, le=1e4)]] = Field(
        default_factory=list, max_length=64
    )
    version: Literal["asr.dashboard/1"] = "asr.dashboard/1"


class WSControl(Control):
    type: Literal["control"]


class WSPush(Push):
    type: Literal["push"]


class WSPing(Strict):
    type: Literal["ping"]


WSMessage = Annotated[WSControl | WSPush | WSPing, Field(discriminator="type")]
