"""Built-in compliance models inside a Batch against their closed forms (docs/models.md,
section 1), for each mode and parameter layout.
"""

import numpy as np
import pytest

import asr
from tests.support.models import (
    COMPLIANT,
    NONDEFAULT,
    REF,
    _per_point_params,
    assert_matches,
    ref_qbmove,
    refmap_closed,
)

# ---------------------------------------------------------------------------- in a Batch


def _batch_grid(model, n, rng):
    q = rng.uniform(-1.2, 1.2, n)
    th1 = rng.uniform(-1.0, 1.0, n)
    if model == "awas2":
        th2 = rng.uniform(0.0, 0.045, n)
    elif model in ("sea", "sea_damped"):
        th2 = np.zeros(n)  # single-motor joints: the second motor does not exist
    else:
        th2 = rng.uniform(-1.0, 1.0, n)
    return q, th1, th2


@pytest.mark.parametrize("model", COMPLIANT)
@pytest.mark.parametrize("variant", ("defaults", "nondefault", "per_instance"))
def test_batch_mode2_closed_form(model, variant):
    rng = np.random.default_rng(99)
    n = 40
    q, th1, th2 = _batch_grid(model, n, rng)
    qd = rng.uniform(-2, 2, n)
    params = {
        "defaults": {},
        "nondefault": dict(NONDEFAULT[model]),
        "per_instance": _per_point_params(model, (n,), rng),
    }[variant]
    jparams = dict(params)
    if model == "qbmove":
        jparams["link_friction"] = 0.0  # isolate the springs (shaft friction tested below)
    b = asr.Batch([asr.Joint(model, 2, jparams)], n)
    refs = np.stack([th1, th2], axis=-1)[:, None, :]
    b.reset(q[:, None], refs)
    out = b.step(q[:, None], qd[:, None], refs, 1e-3)
    ref = REF[model](q, th1, th2, qd, 0.0, 0.0, **params)
    got = {
        "tau1": b.tau_el1[:, 0],
        "tau2": b.tau_el2[:, 0],
        "stiffness": b.stiffness[:, 0],
        "tau_link": b.tau_link[:, 0],
        "defl1": b.defl1[:, 0],
        "defl2": b.defl2[:, 0],
        "clamped": b.clamped[:, 0],
    }
    assert_matches(
        got,
        ref,
        fields=("tau1", "tau2", "stiffness", "tau_link", "defl1", "defl2"),
        what=f"batch {model} {variant}",
    )
    np.testing.assert_array_equal(got["clamped"], ref["clamped"])
    np.testing.assert_allclose(
        np.asarray(out)[:, 0],
        ref["tau_link"],
        rtol=1e-12,
        atol=1e-12 * max(1.0, np.max(np.abs(ref["tau_link"]))),
    )
    # motors are ideal position sources: they sit exactly at the references
    np.testing.assert_array_equal(b.th1[:, 0], th1)
    if model != "sea" and model != "sea_damped":
        np.testing.assert_array_equal(b.th2[:, 0], th2)
    assert np.all(b.status == 0)


@pytest.mark.parametrize(
    "model,preset",
    [("sea", 0.0), ("awas2", 0.03), ("bavs", 0.15), ("qbmove_advanced", 0.4), ("qbmove", 0.3)],
)
def test_batch_mode3_maps_then_closed_form(model, preset):
    n = 12
    eq = np.linspace(-3.0, 3.0, n) if model == "qbmove" else np.linspace(-0.8, 0.8, n)
    q = eq + np.linspace(-0.3, 0.25, n)
    jp = {"link_friction": 0.0} if model == "qbmove" else {}
    b = asr.Batch([asr.Joint(model, 3, jp)], n)
    refs = np.stack([eq, np.full(n, preset)], axis=-1)[:, None, :]
    b.reset(q[:, None], refs)
    b.step(q[:, None], 0.0, refs, 2e-3)
    th1, th2 = refmap_closed(model, eq, preset)
    np.testing.assert_allclose(b.th1[:, 0], th1, rtol=0, atol=1e-15)
    if th2 is None:
        th2 = np.zeros(n)
    else:
        np.testing.assert_allclose(b.th2[:, 0], th2, rtol=0, atol=1e-15)
    ref = REF[model](q, th1, th2)
    got = {
        "tau1": b.tau_el1[:, 0],
        "tau2": b.tau_el2[:, 0],
        "stiffness": b.stiffness[:, 0],
        "tau_link": b.tau_link[:, 0],
    }
    assert_matches(got, ref, fields=tuple(got), clamped=False, what=f"mode 3 {model}")


def test_batch_sea_damped_position_source_velocity():
    """Mode 2: a motor that jumps from r0 to r1 over dt moves at (r1 - r0)/dt, which enters the
    damper of [Kamedula2016] eq. 3."""
    n, dt = 5, 1e-3
    r0 = np.linspace(-0.2, 0.2, n)
    r1 = r0 + np.linspace(-0.01, 0.02, n)
    q, qd = np.full(n, 0.05), np.linspace(-1, 1, n)
    b = asr.Batch([asr.Joint("sea_damped", 2, {"Dt": 0.3})], n)
    b.reset(q[:, None], np.stack([r0, 0 * r0], -1)[:, None, :])
    b.step(q[:, None], qd[:, None], np.stack([r1, 0 * r1], -1)[:, None, :], dt)
    th1d = (r1 - r0) / dt
    expected = 188.0 * (r1 - q) + 0.3 * (th1d - qd)
    np.testing.assert_allclose(b.tau_link[:, 0], expected, rtol=1e-12, atol=1e-12)


def test_batch_qbmove_shaft_friction():
    """qbmove: tau_link = -tau1 - tau2 - tau_friction_shaft, static friction 0.01 N m with a
    presliding width of 0.03 rad on the output shaft."""
    n = 4
    d = np.array([0.01, -0.02, 0.1, -0.3])  # link moved from q0 = 0 by d
    b = asr.Batch([asr.Joint("qbmove", 2, {})], n)
    refs = np.zeros((n, 1, 2))
    b.reset(0.0, refs)
    b.step(d[:, None], 0.0, refs, 1e-3)
    tau_f = (0.01 / 0.03) * np.clip(d, -0.03, 0.03)
    elastic = ref_qbmove(d, 0.0, 0.0)["tau_link"]
    np.testing.assert_allclose(b.tau_fq[:, 0], tau_f, rtol=1e-12)
    np.testing.assert_allclose(b.tau_link[:, 0], elastic - tau_f, rtol=1e-12, atol=1e-15)
    assert np.all(np.abs(b.tau_fq) <= 0.01 + 1e-15)
