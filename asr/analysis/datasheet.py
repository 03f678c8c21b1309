"""Actuator datasheets: torque, stiffness, motor torques and stored energy of a compliance model
over deflection and stiffness preset (docs/datasheet.md).

Everything is evaluated with asr.compliance and asr.reference_map at the model's parameters: no
spring physics lives here, so a user model registered with asr.register_model gets a datasheet
too.
"""

import dataclasses

import numpy as np

from asr.common import validate as V
from asr.common.optional import need
from asr.core.models import check_ref2, compliance, get_model, reference_map

# deflection range (rad) of the default grid for models without a deflection limit `max_def`
UNCLAMPED_RANGE = 0.5
# preset curves of the default datasheet, evenly spaced over the preset range
DEFAULT_PRESET_COUNT = 5
# points of the internal grid on which the energy is integrated (trapezoid rule)
ENERGY_POINTS = 4001
_MAX_POINTS = 100_000


@dataclasses.dataclass(frozen=True)
class Datasheet:
    """Static characteristics of one compliance model. Deflection phi = q - eq (rad): the link
    angle q with the motors held at the reference map's positions for equilibrium eq = 0 and the
    preset. P presets, D deflections, G points of the preset grid; arrays are read-only.

    model, params: the model name and its own parameters used ({name: value}, SI units).
    preset_kind, preset_unit, preset_meaning: what the preset is (PresetSpec of the model).
    presets: (P,) in preset_unit. deflection: (D,) rad.
    torque: (P, D) link torque, N m, restoring (the package's sign: negative for phi > 0 on a
        stable spring; an external load holding the deflection applies -torque).
    stiffness: (P, D) -d torque / d phi, N m/rad (past a clamp: its value at the clamp).
    preset_grid: (G,) in preset_unit, softest to stiffest preset; stiffness_vs_preset: (G,)
        N m/rad at phi = 0; stiffness_range: (min, max) of it, N m/rad.
    max_deflection: the model's deflection limit max_def, rad (inf for a model without one).
    max_torque: (P,) N m, the largest |torque| at phi = +/-max_deflection (without a limit: at
        the ends of `deflection`).
    motor_torque: (P, D, 2) N m, the torque each motor applies to hold its position against the
        springs (-load1, -load2 of asr.compliance; 0 for an absent motor 2).
    energy: (P, D) J, elastic energy stored, integral of -torque from 0 to phi (trapezoid rule on
        an internal grid of ENERGY_POINTS points that contains every deflection).
    """

    model: str
    params: dict
    preset_kind: str
    preset_unit: str
    preset_meaning: str
    presets: np.ndarray
    deflection: np.ndarray
    torque: np.ndarray
    stiffness: np.ndarray
    preset_grid: np.ndarray
    stiffness_vs_preset: np.ndarray
    stiffness_range: tuple[float, float]
    max_deflection: float
    max_torque: np.ndarray
    motor_torque: np.ndarray
    energy: np.ndarray

    def at(self, preset, deflection):
        """One operating point: {"torque" N m, "stiffness" N m/rad, "energy" J,
        "motor_torque" (2,) N m} at `preset` (preset_unit; ignored for preset kind "none") and
        `deflection` (rad)."""
        evaluator = _Evaluator(self.model, self.params)
        pre = (
            np.zeros(1) if self.preset_kind == "none" else evaluator.check_presets(preset, "preset")
        )
        phi = V.finite_array(deflection, "deflection")
        if phi.ndim != 0:
            raise ValueError(f"deflection: expected a number, got shape {phi.shape}")
        phi = phi.reshape(1)
        point = evaluator.characteristics(pre, phi)
        return {
            "torque": float(point["torque"][0, 0]),
            "stiffness": float(point["stiffness"][0, 0]),
            "energy": float(evaluator.energy(pre, phi)[0, 0]),
            "motor_torque": point["motor_torque"][0, 0].copy(),
        }

    def figure(self, operating_point=None):
        """A plotly Figure, 2 x 2 panels: torque vs deflection (a trace per preset), stiffness vs
        deflection, stiffness vs preset (phi = 0), energy vs deflection. operating_point:
        (preset, deflection) in (preset_unit, rad) marks that point on every panel."""
        need("plotly", "plots", "Datasheet.figure")
        from plotly.colors import qualitative
        from plotly.subplots import make_subplots

        fig = make_subplots(
            rows=2,
            cols=2,
            subplot_titles=(
                "torque vs deflection",
                "stiffness vs deflection",
                "stiffness vs preset (zero deflection)",
                "stored energy vs deflection",
            ),
        )
        for k, preset in enumerate(self.presets):
            label = f"preset {preset:g} {self.preset_unit}".rstrip()
            for (row, col), y in (
                ((1, 1), self.torque),
                ((1, 2), self.stiffness),
                ((2, 2), self.energy),
            ):
                fig.add_scatter(
                    x=self.deflection,
                    y=y[k],
                    mode="lines",
                    name=label,
                    legendgroup=label,
                    showlegend=(row, col) == (1, 1),
                    line=dict(color=qualitative.D3[k % len(qualitative.D3)]),
                    row=row,
                    col=col,
                )
        fig.add_scatter(
            x=self.preset_grid,
            y=self.stiffness_vs_preset,
            mode="lines",
            name="stiffness at zero deflection",
            showlegend=False,
            row=2,
            col=1,
            line=dict(color="black"),
        )
        if operating_point is not None:
            self._mark(fig, operating_point)
        unit = f" ({self.preset_unit})" if self.preset_unit else ""
        preset_title = (
            f"preset{unit}"
            if self.preset_kind != "none"
            else "preset (unused: no stiffness command)"
        )
        for row, col, x, y in (
            (1, 1, "deflection (rad)", "torque (N m)"),
            (1, 2, "deflection (rad)", "stiffness (N m/rad)"),
            (2, 1, preset_title, "stiffness (N m/rad)"),
            (2, 2, "deflection (rad)", "energy (J)"),
        ):
            fig.update_xaxes(title_text=x, row=row, col=col)
            fig.update_yaxes(title_text=y, row=row, col=col)
        fig.update_layout(title=f"{self.model} datasheet", legend_title_text="preset")
        return fig

    def _mark(self, fig, operating_point):
        try:
            preset, deflection = operating_point
        except (TypeError, ValueError):
            raise ValueError(
                f"operating_point: expected (preset, deflection), got {operating_point!r}"
            ) from None
        if self.preset_kind == "none":  # the single curve's place on the preset axis
            preset = float(self.presets[0])
        point = self.at(preset, deflection)
        marker = dict(symbol="x", size=12, color="red")
        for (row, col), x, y in (
            ((1, 1), deflection, point["torque"]),
            ((1, 2), deflection, point["stiffness"]),
            ((2, 1), preset, self.at(preset, 0.0)["stiffness"]),
            ((2, 2), deflection, point["energy"]),
        ):
            fig.add_scatter(
                x=[float(x)],
                y=[y],
                mode="markers",
                marker=marker,
                name="operating point",
                legendgroup="operating point",
                showlegend=(row, col) == (1, 1),
                row=row,
                col=col,
            )

    def as_dict(self):
        """JSON-able form: arrays as nested lists, non-finite numbers (an absent deflection
        limit) as None; same keys as the fields."""
        out = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, (np.ndarray, tuple, float)):
                value = _json_numbers(np.asarray(value, dtype=float))
            out[field.name] = value
        out["params"] = {k: (v if np.isfinite(v) else None) for k, v in self.params.items()}
        return out


def _json_numbers(arr):
    obj = np.where(np.isfinite(arr), arr, np.nan).astype(object)
    obj[~np.isfinite(arr)] = None
    return obj.tolist()


def datasheet(model, presets=None, *, deflections=None, n=201, **params):
    """The Datasheet of compliance model `model` (a name in asr.models(), user models included).

    presets: (P,) stiffness presets in the model's preset unit, inside its preset range
        (asr.models()[model].preset lo..hi, AwAS-II also below L). Default: 5 evenly spaced
        over that range (an open end, e.g. k > 0 of an SEA, dropped). For a preset of kind
        "param" (single-motor SEAs) a preset is the value of that spring parameter and the
        motors sit at eq = 0, so the curves do not depend on a second reference; default there
        the parameter's value when it is given in `params`. Kind "none": one curve, no presets.
    deflections: (D,) link deflections phi = q - eq, rad, finite. Default: n points over
        +/-max_def (the model's deflection limit), or +/-UNCLAMPED_RANGE rad without one.
    n: points of the default deflection grid and of the preset grid, in [3, 100000].
    params: the model's own parameters (see asr.models()[model].params); others keep their
        defaults.
    ValueError/TypeError naming the argument for an unknown model or parameter, a value outside
    its range, or a model without a spring.
    """
    n = V.positive_int(n, "n", lo=3, hi=_MAX_POINTS)
    evaluator = _Evaluator(model, params)
    spec = evaluator.spec
    pre = spec.preset
    if pre.kind == "param" and pre.param in params:
        if presets is not None:
            raise ValueError(
                f"presets and {pre.param}: the preset of {spec.name!r} is the spring "
                f"parameter {pre.param}; give one of them, not both"
            )
        presets = params[pre.param]
    presets = (
        evaluator.preset_span(DEFAULT_PRESET_COUNT)
        if presets is None
        else evaluator.check_presets(presets, "presets")
    )
    max_def = evaluator.params.get("max_def", np.inf)
    phi = _deflections(deflections, n, max_def)
    curves = evaluator.characteristics(presets, phi)
    grid = evaluator.preset_span(n)
    at_zero = evaluator.characteristics(grid, np.zeros(1))["stiffness"][:, 0]
    ends = phi[[0, -1]] if not np.isfinite(max_def) else np.array([-max_def, max_def])
    max_torque = np.abs(evaluator.characteristics(presets, ends)["torque"]).max(axis=1)
    return Datasheet(
        model=spec.name,
        params=dict(evaluator.params),
        preset_kind=pre.kind,
        preset_unit=pre.unit if pre.kind != "none" else "",
        preset_meaning=pre.meaning,
        presets=V.read_only(presets),
        deflection=V.read_only(phi),
        torque=V.read_only(curves["torque"]),
        stiffness=V.read_only(curves["stiffness"]),
        preset_grid=V.read_only(grid),
        stiffness_vs_preset=V.read_only(at_zero),
        stiffness_range=(float(at_zero.min()), float(at_zero.max())),
        max_deflection=float(max_def),
        max_torque=V.read_only(max_torque),
        motor_torque=V.read_only(curves["motor_torque"]),
        energy=V.read_only(evaluator.energy(presets, phi)),
    )


def _deflections(deflections, n, max_def):
    """The deflection grid (D,), rad: given (checked) or n points over the deflection range."""
    if deflections is None:
        half = max_def if np.isfinite(max_def) else UNCLAMPED_RANGE
        return np.linspace(-half, half, n)
    phi = V.finite_array(deflections, "deflections")
    if phi.ndim > 1 or phi.size == 0:
        raise ValueError(
            f"deflections: expected a non-empty 1-D array (rad), got shape {phi.shape}"
        )
    return phi.reshape(-1)


class _Evaluator:
    """A model at fixed parameters, evaluated through asr.compliance / asr.reference_map."""

    def __init__(self, model, params):
        self.spec = get_model(model).spec
        if self.spec.nmotor == 0:
            raise ValueError(
                f"model: {model!r} has no spring (no motor), so no datasheet; "
                "choose a compliant model"
            )
        self.params = self._checked(params)

    def _checked(self, params):
        """{name: float} of every own parameter: defaults overridden by `params` (scalars)."""
        own = {p.name: p for p in self.spec.params}
        for name, value in params.items():
            if name not in own:
                raise ValueError(
                    f"unknown parameter {name!r} for model {self.spec.name!r}; "
                    f"valid: {', '.join(own) or 'none'}"
                )
            if np.ndim(value) != 0:
                raise ValueError(f"{name}: expected a number, got shape {np.shape(value)}")
        return {
            name: float(p.check(params.get(name, p.default), f"{self.spec.name}."))
            for name, p in own.items()
        }

    def check_presets(self, values, name):
        """values as a (P,) float array inside the model's preset range; ValueError otherwise."""
        pre = self.spec.preset
        if pre.kind == "none":
            raise ValueError(
                f"{name}: model {self.spec.name!r} has no stiffness preset (kind "
                "'none'); leave it out"
            )
        arr = V.finite_array(values, name)
        if arr.ndim > 1 or arr.size == 0:
            raise ValueError(
                f"{name}: expected a number or a non-empty 1-D array, got shape {arr.shape}"
            )
        arr = arr.reshape(-1)
        unit = f" {pre.unit}" if pre.unit else ""
        outside = (arr < pre.lo) | (arr > pre.hi)
        if pre.kind == "param":
            outside |= ~self.spec.param(pre.param).valid(arr)
        if outside.any():
            extra = (
                f" and {pre.param} in {self.spec.param(pre.param).range_text}"
                if pre.kind == "param"
                else ""
            )
            raise ValueError(
                f"{name}: got {V.num(arr[outside][0])}{unit}, valid range "
                f"[{V.num(pre.lo)}, {V.num(pre.hi)}]{unit}{extra} "
                f"({pre.meaning} of {self.spec.name!r})"
            )
        if pre.below_param is not None:
            check_ref2(self.spec, arr, self.params[pre.below_param], name)
        return arr

    def preset_span(self, count):
        """count presets evenly spaced from softest to stiffest over the preset range, the
        range's ends dropped where they are not valid presets (SEA k = 0, AwAS-II s = L)."""
        pre = self.spec.preset
        if pre.kind == "none":
            return np.zeros(1)
        lo, hi = pre.lo, pre.hi
        if pre.below_param is not None:
            hi = min(hi, self.params[pre.below_param])
        for trial in (
            np.linspace(lo, hi, count),
            np.linspace(lo, hi, count + 1)[1:],
            np.linspace(lo, hi, count + 1)[:-1],
            np.linspace(lo, hi, count + 2)[1:-1],
        ):
            if self._valid_presets(trial):
                return trial
        raise ValueError(
            f"presets: no valid preset in [{V.num(lo)}, {V.num(hi)}] for model {self.spec.name!r}"
        )

    def _valid_presets(self, arr):
        try:
            self.check_presets(arr, "presets")
        except ValueError:
            return False
        return True

    def _arguments(self, presets):
        """compliance keyword arguments with the motors at the reference map for eq = 0: the
        motor angles (P, 1), or, for kind "param", the spring parameter set to each preset."""
        pre = self.spec.preset
        params = dict(self.params)
        if pre.kind == "ref":
            ref2 = presets[:, None]
        else:  # the second reference is unused; the preset, if any, is a spring parameter
            ref2 = np.zeros((presets.size, 1))
            if pre.kind == "param":
                params[pre.param] = presets[:, None]
        theta1, theta2 = reference_map(self.spec.name, 0.0, ref2, **self.params)
        return dict(theta1=theta1, theta2=theta2, **params)

    def characteristics(self, presets, phi):
        """{"torque", "stiffness": (P, D), "motor_torque": (P, D, 2)} at presets (P,) and
        deflections phi (D,)."""
        args = self._arguments(presets)
        shape = (presets.size, phi.size)
        r = compliance(self.spec.name, phi[None, :], **args)
        holding = np.stack([-r.load1, -r.load2], axis=-1)
        if self.spec.nmotor < 2:
            holding[..., 1] = 0.0
        return {
            "torque": np.broadcast_to(r.tau_link, shape).copy(),
            "stiffness": np.broadcast_to(r.stiffness, shape).copy(),
            "motor_torque": np.broadcast_to(holding, shape + (2,)).copy(),
        }

    def energy(self, presets, phi):
        """(P, D) J: integral of -torque from 0 to each phi, trapezoid rule on a grid of
        ENERGY_POINTS points over [min(phi, 0), max(phi, 0)] to which phi and 0 are added."""
        lo, hi = min(phi.min(), 0.0), max(phi.max(), 0.0)
        fine = np.unique(np.concatenate([np.linspace(lo, hi, ENERGY_POINTS), phi, [0.0]]))
        tau = self.characteristics(presets, fine)["torque"]
        steps = -0.5 * (tau[:, 1:] + tau[:, :-1]) * np.diff(fine)
        work = np.concatenate([np.zeros((presets.size, 1)), np.cumsum(steps, axis=1)], axis=1)
        work -= work[:, [np.searchsorted(fine, 0.0)]]
        return work[:, np.searchsorted(fine, phi)]


__all__ = ["Datasheet", "datasheet"]
