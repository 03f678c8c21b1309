"""The dashboard page shows what runs (Debian's Chromium driven by Playwright, a real server on
the 2-DOF qbmove Advanced vertical arm): a refused value goes back to the one in effect in its
field; re-entering a reference field keeps every joint's offset, which has its own field; the
preset label and the datasheet marker show each compare instance's preset and the watched
policy's; the torque modes offer their torque input with its range and draw no unused
equilibrium; a push is refused with a message while paused and acts during watch; a robot
without springs offers no stiffness control and hides the plots it cannot fill. One server and
one page for all of it; a short Throw training runs meanwhile, for the watch."""

import pytest

from tests.conftest import require

require("fastapi")
from tests.support.dashboard_server import chromium_page, page_api, wait_for  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# the smallest Throw training that leaves a policy to watch (as test_dashboard_rl_flows)
THROW = {"#rl-num-envs": "4", "#rl-n-steps": "16", "#rl-batch-size": "64", "#rl-total-steps": "64"}
QBMOVE_RANGE = (0.0, 0.8)  # asr.models()["qbmove_advanced"].preset lo, hi (rad)


@pytest.fixture(scope="module")
def page():
    # 10 frames per second: the page stays responsive on a busy host (the default is 30)
    with chromium_page(rl_stop_s=3, update_hz=10) as pg:
        pg.wait_for_function(
            "() => window.asrDebug.state && window.asrDebug.plotted", timeout=60000
        )
        yield pg
        assert not pg.js_errors, pg.js_errors


def state(pg):
    return page_api(pg, "GET", "/api/state")[1]


def enter(pg, selector, value):
    """Type `value` into a field and commit it (its change event), the focus left in it."""
    pg.fill(selector, value)
    pg.dispatch_event(selector, "change")


def banner(pg, *words):
    """The error banner's text once it shows every one of `words`."""
    pg.wait_for_function(
        """(w) => { const e = document.getElementById('error');
            return !e.hidden && w.every(x => e.textContent.includes(x)); }""",
        arg=list(words),
        timeout=10000,
    )
    return pg.text_content("#error-text")


def value_is(pg, selector, expected):
    """Wait until the field shows `expected` (a number: the same number; text: the same text)."""
    pg.wait_for_function(
        """([s, v]) => { const x = document.querySelector(s).value;
            return typeof v === 'number' ? x !== '' && Number(x) === v : x === v; }""",
        arg=[selector, expected],
        timeout=10000,
    )


def select_joint(pg, name):
    pg.select_option("#joint", name)


def test_a_training_starts_for_the_watch(page):
    page.wait_for_function(
        "() => document.querySelectorAll('#rl-task option').length", timeout=20000
    )
    page.select_option("#rl-task", "asr/Throw-v0")
    for sel, value in THROW.items():
        page.fill(sel, value)
    page.click("#btn-rl-start")
    page.wait_for_function(
        "() => document.getElementById('rl-status').dataset.running === '1'", timeout=20000
    )


def test_refused_values_go_back_to_the_values_in_effect(page):
    select_joint(page, "joint1")
    page_api(page, "POST", "/api/control", {"mode": {"joint1": 6, "joint2": 6}})
    page.wait_for_function("() => !document.getElementById('gains').hidden", timeout=10000)
    kp = state(page)["joints"][0]["params"]["kp"]
    enter(page, "#gain-kp", "-5")
    assert "-5" in banner(page, "kp", "greater than or equal to 0")
    value_is(page, "#gain-kp", kp)
    assert state(page)["joints"][0]["params"]["kp"] == kp

    amplitude = state(page)["reference"]["joint1"]["amplitude"]
    enter(page, "#ref-amplitude", "20")
    banner(page, "amplitude", "20")
    value_is(page, "#ref-amplitude", amplitude)

    enter(page, "#push-torque", "500")
    page.click("#btn-push")
    banner(page, "torque", "500")
    value_is(page, "#push-torque", "2")

    before = page.input_value("#compare-presets")
    enter(page, "#compare-presets", "0.2, 5")
    page.click("#btn-compare")
    banner(page, "preset", "5", "[0, 0.8]")
    value_is(page, "#compare-presets", before)


def test_a_reference_change_keeps_the_offsets(page):
    st = state(page)
    offsets = {j: st["reference"][j]["offset"] for j in ("joint1", "joint2")}
    assert offsets["joint1"] != offsets["joint2"]  # the vertical arm's first view
    select_joint(page, "*")
    value_is(page, "#ref-offset", "")  # all joints, different offsets: mixed
    assert page.get_attribute("#ref-offset", "placeholder") == "mixed"
    enter(page, "#ref-frequency", "0.3")
    page.wait_for_timeout(300)
    enter(page, "#ref-frequency", "0.25")
    wait_for(lambda: state(page)["reference"]["joint1"]["frequency"] == 0.25, 10, "frequency")
    st = state(page)
    assert {j: st["reference"][j]["offset"] for j in offsets} == offsets
    assert st["reference"]["joint2"]["frequency"] == 0.25

    select_joint(page, "joint1")
    value_is(page, "#ref-offset", offsets["joint1"])
    enter(page, "#ref-offset", "-1.2")
    wait_for(lambda: state(page)["reference"]["joint1"]["offset"] == -1.2, 10, "the new offset")
    assert state(page)["reference"]["joint2"]["offset"] == offsets["joint2"]
    enter(page, "#ref-offset", "12")
    banner(page, "offset", "12", "less than or equal to 10")
    value_is(page, "#ref-offset", -1.2)


def preset_label(pg, *parts):
    pg.wait_for_function(
        "(w) => w.every(x => document.getElementById('preset-value').textContent.includes(x))",
        arg=list(parts),
        timeout=15000,
    )
    return pg.text_content("#preset-value")


def datasheet_preset(pg):
    """The preset of the datasheet's operating-point marker (data-op "preset,deflection")."""
    op = pg.get_attribute("#plot-datasheet", "data-op") or ""
    return float(op.split(",")[0]) if op else None


def test_compare_shows_each_instances_preset_and_the_slider_the_models_range(page):
    select_joint(page, "joint1")
    enter(page, "#compare-presets", "0.2, 0.4, 0.6, 0.8")
    page.click("#btn-compare")
    assert "(compare)" in preset_label(page, "0.2 / 0.4 / 0.6 / 0.8")
    # the label switches once the first frame of the compare run is drawn (timeline.js whenDrawn)
    wait_for(
        lambda: "0.2 / 0.4 / 0.6 / 0.8" in page.text_content("#compare-note"),
        20,
        "the compare label",
    )
    # the datasheet marks the first instance's preset
    wait_for(lambda: datasheet_preset(page) == 0.2, 20, "the datasheet marker at 0.2")
    assert not page.is_disabled("#btn-compare-off")
    page.click("#btn-compare-off")
    page.wait_for_selector("#btn-compare-off[disabled]", timeout=10000)
    preset = state(page)["presets"]["joint1"]
    assert "compare" not in preset_label(page, f"= {preset:g} rad")
    slider = [float(page.get_attribute("#preset-slider", a)) for a in ("min", "max")]
    assert tuple(slider) == QBMOVE_RANGE
    assert float(page.input_value("#preset-slider")) == pytest.approx(preset)
    # a preset from the part of the range the old slider left out: in effect, and marked
    page.fill("#preset-slider", "0.76")  # on the slider's step, (hi - lo) / 200
    page.dispatch_event("#preset-slider", "change")
    wait_for(lambda: state(page)["presets"]["joint1"] == 0.76, 10, "the preset 0.76")
    wait_for(lambda: datasheet_preset(page) == 0.76, 20, "the datasheet marker at 0.76")


def test_torque_modes_offer_their_torque_and_draw_no_equilibrium(page):
    select_joint(page, "joint1")
    page.select_option("#mode", "4")
    page.wait_for_selector("#ref-torque-row:not([hidden])", timeout=10000)
    assert page.is_hidden("#ref-kind") and page.is_hidden("#ref-offset")
    assert page.is_visible("#ref-torque2")
    wait_for(lambda: state(page)["joints"][0]["mode"] == 4, 10, "mode 4")
    assert page.get_attribute("#ref-torque", "max") == "6"  # the motor's tau_max, N m
    # the preset (a second reference) is not an input in a torque mode: its controls say so
    page.wait_for_selector("#preset-slider[disabled]", timeout=10000)
    assert "takes torques" in page.text_content("#stiffness-note")
    enter(page, "#ref-torque", "50")
    banner(page, "joint1.torque", "50", "[-6, 6] N m")
    value_is(page, "#ref-torque", 0)
    enter(page, "#ref-torque", "1.5")
    wait_for(lambda: state(page)["reference"]["joint1"]["torque"] == 1.5, 10, "the torque")

    # joint1's equilibrium (and q - eq) is not drawn; joint2's is
    def drawn():
        return page.evaluate(
            """() => Object.fromEntries(['plot-q', 'plot-defl'].flatMap(id =>
                document.getElementById(id).data
                .filter(t => t.meta && ['eq', 'defl'].includes(t.meta.field))
                .map(t => [`${t.meta.field} ${t.meta.joint}`, t.visible !== false])))"""
        )

    expected = {"eq joint1": False, "defl joint1": False, "eq joint2": True, "defl joint2": True}
    wait_for(lambda: drawn() == expected, 10, "joint1's equilibrium hidden")
    page.select_option("#mode", "0")
    page.wait_for_selector("#ref-torque2-label[hidden]", state="attached", timeout=10000)
    wait_for(lambda: state(page)["joints"][0]["mode"] == 0, 10, "mode 0")
    assert "link torque" in page.text_content("#ref-torque-label")
    page.select_option("#mode", "6")
    page.wait_for_selector("#ref-torque-row[hidden]", state="attached", timeout=10000)
    assert page.is_visible("#ref-offset")
    page.wait_for_selector("#btn-stiff:not([disabled])", timeout=10000)
    wait_for(lambda: all(drawn().values()), 10, "joint1's equilibrium drawn again")


def test_push_is_refused_with_a_message_while_paused(page):
    page.click("#btn-pause")
    page.wait_for_selector("#btn-push[disabled]", timeout=10000)
    assert "resume" in page.get_attribute("#btn-push", "title")
    assert "resume" in page.text_content("#push-note")
    code, body = page_api(page, "POST", "/api/push", {"joint": "joint1", "torque": 1.0})
    assert code == 422 and "paused" in body["detail"]
    page.click("#btn-pause")
    page.wait_for_selector("#btn-push:not([disabled])", timeout=10000)
    assert page_api(page, "POST", "/api/push", {"joint": "joint1", "torque": 1.0})[0] == 200


def test_watch_shows_the_policys_preset(page):
    page.wait_for_selector("#btn-rl-watch:not([disabled])", timeout=240000)
    page.click("#btn-rl-watch")
    # the policy exported to ONNX in a child process first (its torch import: seconds)
    page.wait_for_selector("#btn-rl-manual:not([disabled])", timeout=120000)
    wait_for(lambda: (state(page)["watch"] or {}).get("env_step", 0) > 3, 30, "the policy acting")
    select_joint(page, "joint1")
    preset_label(page, "(policy)")
    assert page.is_disabled("#btn-stiff") and page.is_disabled("#ref-frequency")
    assert "policy" in page.text_content("#ref-note")

    # the page follows the watch live (it polls the state): the env steps it shows advance
    # (episode, env step) advances: an episode may end right after the first reading and the
    # next one start at env step 0
    w0 = page.evaluate("() => window.asrDebug.state.watch")
    page.wait_for_function(
        "([e, s]) => { const w = window.asrDebug.state.watch || {};"
        " return w.episode > e || (w.episode === e && w.env_step > s); }",
        arg=[w0["episode"], w0["env_step"]],
        timeout=60000,
    )

    def marker_follows():
        # the marker's preset is the page's state's preset in effect: the policy's
        live = page.evaluate("() => window.asrDebug.state.presets_in_effect.joint1[0]")
        op = datasheet_preset(page)
        return op is not None and abs(op - live) < 1e-9

    wait_for(marker_follows, 20, "the datasheet marker at the policy's preset")
    # a push is not ignored during watch: accepted (the runner applies it to the policy's rollout)
    code, body = page_api(page, "POST", "/api/push", {"joint": "joint1", "torque": 5.0})
    assert code == 200 and body["steps"] > 0
    page.click("#btn-rl-manual")
    page.wait_for_selector("#btn-rl-manual[disabled]", timeout=20000)
    page.wait_for_selector("#btn-stiff:not([disabled])", timeout=10000)
    assert "policy" not in preset_label(page, "rad")


def test_a_robot_without_springs_offers_no_stiffness_control(page):
    page.select_option("#robot", "ur10|rigid")
    page.wait_for_function("() => window.asrDebug.state.variant === 'rigid'", timeout=60000)
    for sel in ("#btn-soft", "#btn-stiff", "#preset-slider", "#btn-compare"):
        page.wait_for_selector(f"{sel}[disabled]", timeout=10000)
    assert "model rigid" in page.text_content("#stiffness-note")
    assert page.is_hidden("#plot-stiffness") and page.is_hidden("#plot-motors")
    modes = page.eval_on_selector_all("#mode option", "os => os.map(o => o.disabled)")
    assert modes == [False, False] + [True] * 5
    assert page.text_content("#preset-value") == ""
