"""Randomisation and noise of asr's tasks: one options object, `Randomization`, passed to a task as
its keyword argument `randomization` (a Randomization, a dict of its fields, or "off" /
"standard"; from the command line `asr train --env randomization='{"mass_scale": 0.1}'`).

Per episode, from the sub-env's own seeded generator (so the same seed gives the same draws and
every episode its own), after the task's own draws (its target):
- start pose: each joint angle q0_j + U(-start_q, start_q), rad (the arm then starts at rest
  but off its static equilibrium and settles from there);
- link masses: the mass and rotational inertia of each moving body times U(1 - mass_scale,
  1 + mass_scale), one factor per body (a uniformly denser or lighter link);
- springs: each spring parameter of each joint times U(1 - spring_scale, 1 + spring_scale), one
  factor per parameter (SPRING_PARAMS: qbmove Advanced k1, a1, k2, a2; the rigid throw arm's
  `sea` transmission k);
- action latency: latency + an integer drawn uniformly from 0..latency_jitter, env steps.
Per env step (and at reset), sensor noise: Gaussian, standard deviation noise_q (rad) on each
observed joint angle and noise_qd (rad/s) on each observed joint velocity, drawn independently
every step; the reward and infos read the true state.

Latency: the action a sub-env applies at env step t is the one given at step t - k of the same
episode; during its first k steps the joints hold the episode's initial references and the
throw's hand stays closed.

The spread of the robots' parameters is not identified: [Mengacci2021] gives the 2-DOF arm's one
spring set with no uncertainty and no link masses (robots/qbmove_arm_2dof/README.md: the masses are
a choice). Randomization.standard() is therefore a documented choice, not a measurement (see its
docstring). Evaluation on a distribution that training did not see: Randomization.scaled(k), every
spread and the latency times k (k = 2: half the draws of each uniform factor fall outside the
training range).

Default: every field 0, off, the task exactly as without randomisation (no draw is made).
"""

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

# the spring parameters randomised per compliance model (asr.models()), scaled by spring_scale
SPRING_PARAMS = {"qbmove_advanced": ("k1", "a1", "k2", "a2"), "sea": ("k",)}

NAMED = ("off", "standard")


@dataclasses.dataclass(frozen=True)
class Randomization:
    """Randomisation and noise of a task (module docstring). Every field 0: off.

    start_q: half-width of the uniform start-angle offset per joint, rad, in [0, 0.5].
    mass_scale: half-width of the uniform mass factor per link body (1 +- mass_scale), in
        [0, 0.5] (a fraction, no unit).
    spring_scale: half-width of the uniform factor per spring parameter (1 +- spring_scale), in
        [0, 0.5] (a fraction).
    noise_q: standard deviation of the Gaussian noise on each observed joint angle, rad, in
        [0, 0.1].
    noise_qd: standard deviation of the Gaussian noise on each observed joint velocity, rad/s,
        in [0, 2].
    latency: action latency, env steps, an integer in [0, 10].
    latency_jitter: extra latency drawn per episode uniformly from 0..latency_jitter, env steps,
        an integer in [0, 10].
    """

    start_q: float = 0.0
    mass_scale: float = 0.0
    spring_scale: float = 0.0
    noise_q: float = 0.0
    noise_qd: float = 0.0
    latency: int = 0
    latency_jitter: int = 0

    # field: (unit, lo, hi, integer)
    RANGES: ClassVar[dict[str, tuple[str, float, float, bool]]] = {
        "start_q": ("rad", 0.0, 0.5, False),
        "mass_scale": ("fraction of the nominal mass", 0.0, 0.5, False),
        "spring_scale": ("fraction of the nominal value", 0.0, 0.5, False),
        "noise_q": ("rad", 0.0, 0.1, False),
        "noise_qd": ("rad/s", 0.0, 2.0, False),
        "latency": ("env steps", 0, 10, True),
        "latency_jitter": ("env steps", 0, 10, True),
    }

    def __post_init__(self) -> None:
        for name, (unit, lo, hi, integer) in self.RANGES.items():
            value = getattr(self, name)
            where = f"Randomization.{name}"
            if integer:
                ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
                if not ok:
                    raise TypeError(f"{where}: got {value!r}, expected an integer in [{lo}, {hi}]")
                value = int(value)
            else:
                ok = isinstance(value, (int, float, np.integer, np.floating))
                if isinstance(value, bool) or not ok:
                    raise TypeError(f"{where}: got {value!r}, expected a number in [{lo}, {hi}]")
                value = float(value)
            if not (math.isfinite(value) and lo <= value <= hi):
                raise ValueError(f"{where}: got {value!r}, valid range [{lo}, {hi}] {unit}")
            object.__setattr__(self, name, value)

    @property
    def active(self) -> bool:
        """True when any field is non-zero (the env then draws per episode)."""
        return any(getattr(self, name) for name in self.RANGES)

    @property
    def max_latency(self) -> int:
        """The largest latency an episode can draw, env steps."""
        return int(self.latency + self.latency_jitter)

    @classmethod
    def standard(cls) -> "Randomization":
        """The documented default spreads, choices where nothing is identified: start_q 0.05 rad
        (below the 0.08 rad tolerance band of [Mengacci2021]'s ILC), mass_scale 0.1 (the link
        masses are a choice, robots/qbmove_arm_2dof/README.md), spring_scale 0.1 (the paper's
        identified set has no stated spread), noise_q 0.001 rad (of the order of a 12-bit
        encoder's step, 2 pi / 4096 = 1.5 mrad), noise_qd 0.05 rad/s (that step differenced
        over 20-30 ms), latency 0 plus 0 or 1 env step."""
        return cls(
            start_q=0.05,
            mass_scale=0.1,
            spring_scale=0.1,
            noise_q=0.001,
            noise_qd=0.05,
            latency=0,
            latency_jitter=1,
        )

    def scaled(self, k: float) -> "Randomization":
        """The evaluation distribution: every spread (start_q, mass_scale, spring_scale,
        noise_q, noise_qd) times k and latency, latency_jitter times k rounded to integers;
        k > 1 draws beyond what training saw (k = 2: half the draws of each uniform factor lie
        outside the training range). k >= 0; a result outside a field's range is refused
        (ValueError naming it)."""
        if isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)):
            raise TypeError(f"k: got {k!r}, expected a number >= 0")
        if not (math.isfinite(k) and k >= 0):
            raise ValueError(f"k: got {k!r}, valid range [0, inf)")
        values = {}
        for name, (_, _, _, integer) in self.RANGES.items():
            v = getattr(self, name) * float(k)
            values[name] = int(round(v)) if integer else v
        return Randomization(**values)

    def as_dict(self) -> dict[str, float | int]:
        """The fields as a JSON-ready dict (what the `randomization` keyword takes, and what
        asr.rl.train's env_kwargs store)."""
        return {name: getattr(self, name) for name in self.RANGES}

    @classmethod
    def parse(cls, value: Any, name: str = "randomization") -> "Randomization":
        """A Randomization from None / "off" (off), "standard", a Randomization or a dict of its
        fields (ValueError naming an unknown field and the valid ones)."""
        if value is None or (isinstance(value, str) and value == "off"):
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            if value == "standard":
                return cls.standard()
            raise ValueError(
                f"{name}: got {value!r}, expected one of {NAMED}, a dict of Randomization's "
                f"fields ({', '.join(cls.RANGES)}) or a Randomization"
            )
        if isinstance(value, Mapping):
            unknown = [k for k in value if k not in cls.RANGES]
            if unknown:
                raise ValueError(
                    f"{name}: unknown field {unknown[0]!r}; valid: {', '.join(cls.RANGES)}"
                )
            return cls(**value)
        raise TypeError(
            f"{name}: got {type(value).__name__}, expected None, {NAMED}, a dict or a Randomization"
        )


@dataclasses.dataclass
class EpisodeDraw:
    """One episode's draws of one sub-env.

    start_dq: (J,) start-angle offsets, rad. mass: (B,) factors of the moving bodies' masses and
    inertias. spring: one (P_j,) array of factors per joint (its SPRING_PARAMS). latency: env
    steps."""

    start_dq: np.ndarray
    mass: np.ndarray
    spring: list[np.ndarray]
    latency: int


def draw_episode(
    r: Randomization, rng: np.random.Generator, n_joints: int, n_bodies: int, n_spring: list[int]
) -> EpisodeDraw:
    """One episode's draws from rng, always in the same order (start, masses, springs, then the
    latency jitter when there is one), each factor from one standard uniform draw, so that
    r.scaled(k) with the same seed moves every draw by the factor k (common random numbers)."""
    start = r.start_q * rng.uniform(-1.0, 1.0, n_joints)
    mass = 1.0 + r.mass_scale * rng.uniform(-1.0, 1.0, n_bodies)
    spring = [1.0 + r.spring_scale * rng.uniform(-1.0, 1.0, p) for p in n_spring]
    jitter = int(rng.integers(0, r.latency_jitter + 1)) if r.latency_jitter else 0
    return EpisodeDraw(start, mass, spring, r.latency + jitter)


def draw_noise(
    r: Randomization, rng: np.random.Generator, n_joints: int
) -> tuple[np.ndarray, np.ndarray]:
    """One observation's sensor noise: ((J,) rad on q, (J,) rad/s on qd), Gaussian, zero mean,
    standard deviations noise_q and noise_qd (one standard normal draw of 2 J values)."""
    z = rng.standard_normal(2 * n_joints)
    return r.noise_q * z[:n_joints], r.noise_qd * z[n_joints:]


def moving_bodies(model: Any) -> list[int]:
    """The MuJoCo model's bodies that move (not welded to the world) and have mass: the links
    whose masses mass_scale varies."""
    return [
        b
        for b in range(1, model.nbody)
        if int(model.body_weldid[b]) != 0 and float(model.body_mass[b]) > 0.0
    ]


__all__ = [
    "Randomization",
    "EpisodeDraw",
    "SPRING_PARAMS",
    "draw_episode",
    "draw_noise",
    "moving_bodies",
]
