"""The interaction panel's flows on the elastic ur10 variants and its value ranges
(dashboard/PROTOCOL.md "Interaction control"): vsa_soft and vsa_stiff reach the start pose (the
tool where it was sent, FSM "static") and press the plate with the force reference they accept;
the equilibria that hold gravity match robots/ur10's closed form; a force or gain outside its
range is refused (422 naming the field, the value and the range) and the session keeps the value
in effect; then the page in Debian's Chromium (Playwright) shows both."""

import numpy as np
import pytest

from tests.conftest import require

require("fastapi")
require("httpx")
import asr  # noqa: E402
from asr_dashboard import interaction as ic  # noqa: E402
from tests.support.dashboard_interaction import (  # noqa: E402
    ANSWER_MS,
    SIM_MS,
    SIM_S,
    client,  # noqa: F401 (a fixture)
    status,
)
from tests.support.dashboard_server import wait_for  # noqa: E402

START = np.array(ic.START_POSITION)
PRESS_N = 20.0  # force reference, N along the tool axis (down)


def test_gravity_equilibria_match_the_closed_form_at_home():
    """robots/ur10's initial refs of the VSA variants: eq = q + asinh(g / (2 k cosh(a p))) / a
    with MuJoCo's gravity torques at home; asr computes them by bisection of the model's torque."""
    for variant in ("vsa_soft", "vsa_stiff"):
        sim = asr.Sim("ur10", 1, variant=variant, controller=asr.DirectForce([0] * 3, [0] * 3))
        refs = np.array(sim.robot.initial_refs)
        eq = sim.controller.gravity_equilibria(sim.robot.initial_q, refs[:, 1])
        np.testing.assert_allclose(eq, refs[:, 0], atol=1e-5, err_msg=variant)


@pytest.mark.slow
@pytest.mark.parametrize("variant, tolerance_n", [("vsa_stiff", 1.0), ("vsa_soft", 10.0)])
def test_elastic_variant_reaches_the_start_pose_and_presses(client, variant, tolerance_n):
    """The start move ends in "static" with the tool within 5 mm of the start pose, free of
    contact (1 cm above the plate); the force reference is accepted and the tool presses the
    plate with it (vsa_soft converges slowly: its links' directions at the equilibria differ)."""
    r = client.post("/api/interaction/start", json={"variant": variant})
    assert r.status_code == 200, r.text
    try:
        wait_for(lambda: status(client)["message"] == "holding (static law)", SIM_S, "static")
        st = status(client)
        assert st["fsm"] == "static"
        assert np.linalg.norm(np.array(st["x_m"]) - START) < 5e-3, st["x_m"]
        assert np.linalg.norm(st["f_e"]) < 1.0, st["f_e"]  # free of contact, bias removed
        r = client.post("/api/interaction/reference", json={"force": [0, 0, PRESS_N]})
        assert r.status_code == 200, r.text
        wait_for(lambda: abs(status(client)["f_e"][2] - PRESS_N) < tolerance_n, SIM_S, "the force")
        assert status(client)["x_m"][2] < 0.0605  # the tcp at the plate (0.06: touching)
    finally:
        client.post("/api/interaction/stop")


@pytest.mark.slow
@pytest.mark.parametrize(
    "body, field, words",
    [
        ({"force": [0, 0, 1e9]}, "force", "z = 1e+09 N is outside the valid range [-100, 100] N"),
        ({"force": [-150, 0, 0]}, "force", "x = -150 N is outside the valid range [-100, 100]"),
    ],
)
def test_out_of_range_force_is_refused_and_the_reference_kept(client, body, field, words):
    client.post("/api/interaction/start", json={"variant": "rigid"})
    try:
        wait_for(lambda: status(client)["fsm"] == "static", SIM_S, "static")
        assert client.post("/api/interaction/reference", json={"force": [0, 0, 5]}).is_success
        r = client.post("/api/interaction/reference", json=body)
        assert r.status_code == 422 and r.json()["detail"].startswith(f"{field}: "), r.text
        assert words in r.json()["detail"]
        assert status(client)["force_reference"] == [0, 0, 5]
    finally:
        client.post("/api/interaction/stop")


@pytest.mark.parametrize(
    "path, body, words",
    [
        (
            "start",
            {"ki": [0, 0, 1e6]},
            "ki: z = 1e+06 m/(N s) is outside the valid range [0, 0.003]",
        ),
        ("start", {"kp": [1e-3, 0, 0]}, "kp: x = 0.001 m/N is outside the valid range [0, 3e-05]"),
        ("start", {"law": "admittance", "mass": [1, 1e4, 1]}, "mass: y = 10000 kg is outside"),
        ("start", {"law": "admittance", "damping": [900, 900, 10]}, "[150, 10000] N s/m"),
        ("start", {"law": "admittance", "stiffness": [1e7, 0, 0]}, "[0, 100000] N/m"),
        ("law", {"ki": [0, 0, 1e6]}, "ki: z = 1e+06 m/(N s) is outside the valid range"),
    ],
)
def test_out_of_range_gains_are_refused(client, path, body, words):
    """At start nothing runs after the 422; a law change keeps the gains in effect."""
    if path == "law":
        client.post("/api/interaction/start", json={"variant": "rigid"})
    try:
        r = client.post(f"/api/interaction/{path}", json=body)
        assert r.status_code == 422 and words in r.json()["detail"], r.text
        st = status(client)
        assert st["running"] == (path == "law")
        if path == "law":
            assert st["law"] == "direct_force" and st["gains"]["ki"] == [0, 0, 1e-3]
    finally:
        client.post("/api/interaction/stop")


def test_options_give_the_ranges(client):
    ranges = client.get("/api/interaction/options").json()["ranges"]
    assert ranges["force"] == {"min": -100, "max": 100, "unit": "N"}
    assert ranges["ki"]["max"] == 3e-3 and set(ranges) == set(ic.RANGES)


# ------------------------------------------------------------------ the page


def field_values(pg, prefix):
    return [pg.input_value(f"#{prefix}-{a}") for a in "xyz"]


@pytest.mark.slow
@pytest.mark.browser
def test_panel_runs_vsa_soft_and_refuses_out_of_range_values():
    from tests.support.dashboard_server import chromium_page

    with chromium_page() as pg:
        pg.wait_for_function(
            "() => [...document.querySelectorAll('#ic-variant option')]"
            ".some(o => o.value === 'vsa_soft') && document.getElementById('ic-gain-ki-z')",
            timeout=ANSWER_MS,
        )
        assert "[0, 0.003] m/(N s)" in pg.get_attribute("#ic-gain-ki-z", "title")
        assert "[-100, 100] N" in pg.get_attribute("#ic-force-z", "title")
        pg.select_option("#ic-variant", "vsa_soft")
        pg.click("#btn-ic-start")
        pg.wait_for_function(
            "() => /holding/.test(document.getElementById('ic-status').textContent)",
            timeout=SIM_MS,
        )
        assert pg.text_content("#ic-fsm") == "static"
        pg.click("#btn-ic-force")  # 10 N on z (the panel's default): accepted
        pg.wait_for_function(
            "() => /force reference set|f_d z 10.00/"
            ".test(document.getElementById('ic-status').textContent)",
            timeout=SIM_MS,
        )
        assert pg.is_hidden("#ic-error")
        # out of range: the server's range shows, the field goes back to the force in effect
        pg.fill("#ic-force-z", "1e9")
        pg.click("#btn-ic-force")
        pg.wait_for_selector("#ic-error:not([hidden])", timeout=ANSWER_MS)
        assert "valid range [-100, 100] N" in pg.text_content("#ic-error")
        pg.wait_for_function(
            "() => document.getElementById('ic-force-z').value === '10'", timeout=ANSWER_MS
        )
        pg.fill("#ic-gain-ki-z", "1e6")
        pg.click("#btn-ic-law")
        pg.wait_for_function(
            "() => /ki: z = 1e\\+06/.test(document.getElementById('ic-error').textContent)",
            timeout=ANSWER_MS,
        )
        assert "[0, 0.003] m/(N s)" in pg.text_content("#ic-error")
        assert field_values(pg, "ic-gain-ki") == ["0", "0", "0.001"]
        assert "direct_force on vsa_soft" in pg.text_content("#ic-status")
        pg.click("#btn-ic-stop")
        # the page learns it from the stop's answer or a message (late on a busy host)
        pg.wait_for_function(
            "() => document.getElementById('ic-status').dataset.running === '0'",
            timeout=ANSWER_MS,
        )
        assert not pg.js_errors, pg.js_errors
