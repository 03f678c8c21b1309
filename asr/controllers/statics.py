"""Where an elastic joint's springs hold a link load: the equilibria an interaction
controller's setpoint sends so that the links of a soft arm reach the pose asked for instead of
sagging below it (asr.controllers.interaction's gravity_equilibria)."""

from asr.core.models import compliance, get_model, reference_map


def holding_deflection(model: str, params: dict[str, float], preset: float, torque: float) -> float:
    """The deflection eq - q (rad) at which compliance model `model` (its own parameters in
    `params`, others ignored) at `preset` holds a link load `torque` (N m, the torque the springs
    must apply: MuJoCo's gravity torque qfrc_bias at rest): bisection of the spring torque, which
    falls monotonically with q - eq, over +/- max_def (1 rad without a limit). ValueError when the
    springs cannot hold it there."""
    names = {p.name for p in get_model(model).spec.params}
    own = {k: v for k, v in params.items() if k in names}
    th1, th2 = reference_map(model, 0.0, preset, **own)
    lo = -float(own.get("max_def", 1.0))
    hi = -lo

    def spring(phi: float) -> float:  # the springs' torque on the link at q - eq = phi
        return float(compliance(model, phi, th1, th2, **own).tau_link)

    if not spring(hi) <= torque <= spring(lo):
        raise ValueError(
            f"{model}: the springs at preset {preset:g} cannot hold {torque:.4g} N m within "
            f"their deflection range [{lo:g}, {hi:g}] rad"
        )
    for _ in range(60):  # 2 max_def / 2^60: below 1e-15 rad
        mid = 0.5 * (lo + hi)
        if spring(mid) > torque:
            lo = mid
        else:
            hi = mid
    return -0.5 * (lo + hi)


__all__ = ["holding_deflection"]
